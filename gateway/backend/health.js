'use strict';

// Whether the backend is answering, as the queries see it. A run of FAIL_AFTER host errors in a
// row (5xx, unreachable, reset, bad JSON, deadline) makes it `failing`; the first answer (2xx or
// 4xx) makes it `reachable` again. The failing line (a warning) says what the router gets
// meanwhile; it comes at most once per LOG_EVERY_MS (a flapping backend cannot flood the log:
// the next line says how many changes it folded in). The recovery after a logged failure is
// logged when it happens, at info. Both are counted in ged145_backend_up and shown on /health.

const FAIL_AFTER = 5;
const LOG_EVERY_MS = 10_000;

class BackendHealth {
  /**
   * instead: what the router gets while the backend fails ("E_AG_HOST_ERROR1", "the fallback answer"...).
   * previous: the health this one replaces (a reload): from now on this one alone sets
   * ged145_backend_up, and with keepState (the same backend) it goes on from the previous one's state.
   */
  constructor({
    log, metrics, failAfter = FAIL_AFTER, logEveryMs = LOG_EVERY_MS, instead = 'E_AG_HOST_ERROR1', previous = null, keepState = false,
  } = {}) {
    this.log = log;
    this.instead = instead;
    this.metrics = metrics;
    this.failAfter = failAfter;
    this.logEveryMs = logEveryMs;
    this.state = 'reachable';
    this.since = Date.now();
    this.consecutiveFailures = 0;
    this.failuresInState = 0; // failed queries since the state last changed
    this.lastError = null;
    this.loggedAt = 0;
    this.loggedState = 'reachable';
    this.unlogged = 0; // changes folded into the next line
    this.logTimer = null;
    if (previous !== null) this.takeOver(previous, keepState);
  }

  /** The gauge is one, and so is its owner: the previous health hands it over (its queries in flight still tell it). */
  takeOver(previous, keepState) {
    const state = previous.handOver();
    if (keepState) Object.assign(this, state);
    if (this.metrics) this.metrics.backendUp.set(this.state === 'reachable' ? 1 : 0);
  }

  /** What a reload's health goes on from; this one no longer sets ged145_backend_up. */
  handOver() {
    this.metrics = null;
    return {
      state: this.state,
      since: this.since,
      consecutiveFailures: this.consecutiveFailures,
      failuresInState: this.failuresInState,
      lastError: this.lastError,
      loggedAt: this.loggedAt,
      loggedState: this.loggedState,
    };
  }

  success() {
    this.consecutiveFailures = 0;
    if (this.state === 'failing') this.change('reachable');
  }

  failure(reason) {
    this.consecutiveFailures++;
    this.failuresInState++;
    this.lastError = reason;
    if (this.state === 'reachable' && this.consecutiveFailures >= this.failAfter) this.change('failing');
  }

  change(to) {
    const from = this.state;
    const failed = this.failuresInState;
    const lasted = Date.now() - this.since;
    this.state = to;
    this.since = Date.now();
    this.failuresInState = 0;
    if (this.metrics) this.metrics.backendUp.set(to === 'reachable' ? 1 : 0);
    // Good news after a logged failure goes out at once; otherwise one line per logEveryMs.
    if ((to === 'reachable' && this.loggedState === 'failing') || Date.now() - this.loggedAt >= this.logEveryMs) this.write({ from, failed, lasted });
    else {
      this.unlogged++;
      if (this.logTimer === null) {
        this.logTimer = setTimeout(() => this.flush(), this.logEveryMs - (Date.now() - this.loggedAt));
        this.logTimer.unref();
      }
    }
  }

  /** After a quiet spell: log where the backend ended up, if the last line said otherwise. */
  flush() {
    this.logTimer = null;
    if (this.state !== this.loggedState) this.write({});
    else this.unlogged = 0;
  }

  write({ from, failed, lasted }) {
    if (!this.log) return;
    const folded = this.unlogged > 0 ? { changesNotLogged: this.unlogged } : {};
    if (this.state === 'failing') {
      const what = `${this.consecutiveFailures} queries in a row got no answer (last: ${this.lastError})`;
      this.log.warn(`backend failing: ${what}; the router gets ${this.instead}`, {
        consecutiveFailures: this.consecutiveFailures, lastError: this.lastError, ...folded,
      });
    } else {
      const after = from === 'failing' ? { failedQueries: failed, failingForMs: lasted } : {};
      this.log.info('backend reachable again', { ...after, ...folded });
    }
    this.loggedAt = Date.now();
    this.loggedState = this.state;
    this.unlogged = 0;
  }

  toJSON() {
    return {
      state: this.state, since: new Date(this.since).toISOString(), consecutiveFailures: this.consecutiveFailures, lastError: this.lastError,
    };
  }

  close() {
    if (this.logTimer !== null) clearTimeout(this.logTimer);
    this.logTimer = null;
  }
}

module.exports = { BackendHealth };
