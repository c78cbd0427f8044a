'use strict';

// One circuit breaker per backend origin (cockatiel). After `consecutiveFailures` failed queries
// in a row the origin's circuit opens: queries to it are answered at once (stale, fallback or
// E_AG_HOST_ERROR1) instead of waiting for a backend that is down. After `halfOpenAfterMs` one
// query is let through as a probe; its success closes the circuit, its failure opens it again.
// A failure is a backend outcome of kind host_error (5xx, unreachable, reset, bad JSON, the
// deadline), never a 4xx answer and never a query the router abandoned.

const {
  circuitBreaker, ConsecutiveBreaker, handleWhenResult, CircuitState, BrokenCircuitError,
} = require('cockatiel');

const STATE_NAMES = Object.freeze({
  [CircuitState.Closed]: 'closed', [CircuitState.Open]: 'open', [CircuitState.HalfOpen]: 'half-open', [CircuitState.Isolated]: 'isolated',
});
const STATE_VALUES = Object.freeze({ closed: 0, 'half-open': 1, open: 2, isolated: 2 });

const isFailure = (outcome) => outcome.kind === 'host_error' && outcome.reason !== 'aborted';

class Breakers {
  /** settings: {enabled, consecutiveFailures, halfOpenAfterMs}, or per origin through settingsFor(origin). */
  constructor(settings, { log, metrics, settingsFor = () => settings } = {}) {
    this.settings = settings;
    this.settingsFor = settingsFor;
    this.log = log;
    this.metrics = metrics;
    this.byOrigin = new Map();
  }

  /** The origin's breaker, made on first use; null when breakers are off for it. */
  get(origin) {
    let entry = this.byOrigin.get(origin);
    if (entry !== undefined) return entry;
    const s = this.settingsFor(origin);
    if (!s || !s.enabled) {
      this.byOrigin.set(origin, null);
      return null;
    }
    const policy = circuitBreaker(handleWhenResult(isFailure), {
      halfOpenAfter: s.halfOpenAfterMs,
      breaker: new ConsecutiveBreaker(s.consecutiveFailures),
    });
    entry = { origin, policy, state: 'closed', since: Date.now() };
    policy.onStateChange((state) => this.changed(entry, STATE_NAMES[state] || String(state)));
    if (this.metrics) this.metrics.breakerState.labels(origin).set(0);
    this.byOrigin.set(origin, entry);
    return entry;
  }

  /** True when a query sent to this origin now would be refused by its open circuit. */
  isOpen(origin) {
    const entry = this.get(origin);
    return entry !== null && entry.state === 'open';
  }

  /**
   * Runs send() through the origin's breaker: its outcome, or a host_error 'circuit-open' at
   * once when the circuit refuses the call.
   */
  async run(origin, send) {
    const entry = this.get(origin);
    if (entry === null) return send();
    try {
      return await entry.policy.execute(send);
    } catch (err) {
      if (err instanceof BrokenCircuitError) return { kind: 'host_error', reason: 'circuit-open', text: 'backend circuit open' };
      throw err;
    }
  }

  changed(entry, state) {
    const from = entry.state;
    entry.state = state;
    entry.since = Date.now();
    if (this.metrics) this.metrics.breakerState.labels(entry.origin).set(STATE_VALUES[state]);
    if (!this.log) return;
    if (state === 'open') {
      this.log.warn(
        `backend circuit open for ${entry.origin}: queries are answered at once (stale, fallback or E_AG_HOST_ERROR1) until a probe succeeds`, { from }
      );
    } else if (state === 'half-open') {
      this.log.info(`backend circuit half-open for ${entry.origin}: probing with one query`, { from });
    } else {
      this.log.warn(`backend circuit closed for ${entry.origin}: the backend answers again`, { from });
    }
  }

  toJSON() {
    const out = {};
    for (const [origin, entry] of this.byOrigin) {
      if (entry !== null) out[origin] = { state: entry.state, since: new Date(entry.since).toISOString() };
    }
    return out;
  }

  close() {
    for (const entry of this.byOrigin.values()) if (entry !== null) entry.policy.dispose?.();
  }
}

module.exports = { Breakers, isFailure };
