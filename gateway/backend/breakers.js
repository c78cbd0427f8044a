'use strict';

// One circuit per backend origin (circuit.js has the policy and why): the glue between it and
// the backend calls, the log, /health and ged145_backend_circuit_state.
//
// What counts against an origin is what says something about it (verdict below): a refused or
// reset connection, a 5xx, a body that is not JSON, a request that was on the wire for a good part
// of its time and got no answer. A query that spent its time waiting inside the gateway (for a
// free connection, or for a busy event loop) is no evidence, and neither is a router that went
// away; a 4xx is an answer.

const { performance } = require('node:perf_hooks');
const { Circuit, REFUSED } = require('./circuit');
const { KIND, REASON, hostError } = require('./outcome');

const STATE_VALUES = Object.freeze({ closed: 0, 'half-open': 1, open: 2 });
const CIRCUIT_OPEN = Object.freeze(hostError(REASON.CIRCUIT_OPEN, 'backend circuit open'));

/** true: the origin failed; false: it answered; null: the outcome says nothing about it. */
function verdict(outcome) {
  if (outcome.kind !== KIND.HOST_ERROR) return false;
  return outcome.blame === true ? true : null;
}

const monotonicMs = () => performance.now();

class Breakers {
  /** settings: see BREAKER_DEFAULTS, or per origin through settingsFor(origin); now: a clock for tests. */
  constructor(settings, {
    log, metrics, settingsFor = () => settings, now = monotonicMs,
  } = {}) {
    this.settings = settings;
    this.settingsFor = settingsFor;
    this.log = log;
    this.metrics = metrics;
    this.now = now;
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
    entry = {
      origin, circuit: null, since: Date.now(), lastError: null,
    };
    entry.circuit = new Circuit(s, { now: this.now, onChange: (state, from) => this.changed(entry, state, from) });
    if (this.metrics) this.metrics.breakerState.labels(origin).set(0);
    this.byOrigin.set(origin, entry);
    return entry;
  }

  /**
   * True when a query sent to this origin now would be refused. An open circuit whose probe is
   * due says false, so that an origin skipped for another one still gets its probe on time.
   */
  isOpen(origin) {
    const entry = this.get(origin);
    return entry !== null && entry.circuit.isOpen();
  }

  /** Runs send() through the origin's circuit: its outcome, or a host_error circuit_open at once. */
  async run(origin, send) {
    const entry = this.get(origin);
    if (entry === null) return send();
    const ticket = entry.circuit.allow();
    if (ticket === REFUSED) return CIRCUIT_OPEN;
    let outcome = null;
    try {
      outcome = await send();
      return outcome;
    } finally {
      const v = outcome === null ? null : verdict(outcome);
      if (v === true) entry.lastError = outcome.detail || outcome.reason;
      entry.circuit.record(ticket, v);
    }
  }

  changed(entry, state, from) {
    entry.since = Date.now();
    if (this.metrics) this.metrics.breakerState.labels(entry.origin).set(STATE_VALUES[state]);
    if (!this.log) return;
    if (state === 'open') {
      const why = from === 'half-open' ? 'the probe failed' : 'most of its recent queries failed';
      const again = `${why} (last: ${entry.lastError}); next probe in ${Math.round(entry.circuit.delayMs)} ms`;
      this.log.warn(
        `backend circuit open for ${entry.origin}: ${again}; its queries are answered at once (stale, fallback or E_AG_HOST_ERROR1)`, { from }
      );
    } else if (state === 'half-open') {
      this.log.info(`backend circuit half-open for ${entry.origin}: probing with one query`, { from });
    } else {
      this.log.info(`backend circuit closed for ${entry.origin}: the backend answers again`, { from });
    }
  }

  toJSON() {
    const out = {};
    for (const [origin, entry] of this.byOrigin) {
      if (entry !== null) out[origin] = { state: entry.circuit.state, since: new Date(entry.since).toISOString(), lastError: entry.lastError };
    }
    return out;
  }
}

module.exports = { Breakers, verdict };
