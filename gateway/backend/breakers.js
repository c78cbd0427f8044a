'use strict';

// One circuit per route per backend origin (circuit.js has the policy and why): the glue between
// it and the backend calls, the log, /health and ged145_backend_circuit_state.
//
// Per route, as Hystrix counts per command: a subtype whose calls fail does not open the circuit
// of a healthy subtype on the same origin, and a route's own `breaker` settings are its own. The
// route key is the subtype (a router may send any subtype to the default contract, so at most
// MAX_ROUTES keys are made per origin; the rest share one).
//
// An open circuit refuses a call only where another origin can take it (failover or balance):
// the call goes there. With no other origin it is sent anyway (issue 34, docs/reliability.md): a
// refusal would answer the same failure, or the same stale or fallback answer, only sooner, and
// would miss every answer the backend gives once it is back (a flapping backend, 1 s up and 1 s
// down, was answered half as often with the circuit as without). An answer to such a call closes
// the circuit at once. The circuit still tells the operator (log, /health, metrics) and still
// probes an origin that failover skips.
//
// What counts against a route is what says something about it (verdict below): a refused or
// reset connection, a 5xx, a body that is not JSON are failures; a request that was on the wire for
// a good part of its time and got no answer is slow. A query that spent its time waiting inside the
// gateway (for a free connection, or for a busy event loop) is no evidence, and neither is a router
// that went away; a 4xx is an answer.

const { performance } = require('node:perf_hooks');
const {
  Circuit, REFUSED, FAILED, SLOW,
} = require('./circuit');
const {
  KIND, REASON, hostError, gaveUp,
} = require('./outcome');

const STATE_VALUES = Object.freeze({ closed: 0, 'half-open': 1, open: 2 });
const STATES = Object.freeze(['closed', 'half-open', 'open']);
const CIRCUIT_OPEN = Object.freeze(hostError(REASON.CIRCUIT_OPEN, 'backend circuit open'));
/** Circuits per origin for subtypes that are not configured routes; the rest share OTHER. */
const MAX_ROUTES = 100;
const OTHER = '(other)';
const NONE = '(none)';

/** FAILED: the origin failed; SLOW: it gave no answer in time; false: it answered; null: no evidence. */
function verdict(outcome) {
  if (outcome.kind !== KIND.HOST_ERROR) return false;
  if (outcome.blame !== true) return null;
  return gaveUp(outcome.reason) ? SLOW : FAILED;
}

const monotonicMs = () => performance.now();

class Breakers {
  /**
   * settings: the top level's (BREAKER_DEFAULTS); settingsFor(route): a route's own, else settings;
   * known(route): a configured route (always a circuit of its own); now: a clock for tests.
   */
  constructor(settings, {
    log, metrics, settingsFor = () => settings, known = () => false, now = monotonicMs,
  } = {}) {
    this.settingsFor = settingsFor;
    this.known = known;
    this.log = log;
    this.metrics = metrics;
    this.now = now;
    this.byOrigin = new Map(); // origin -> Map(route key -> entry, or null when off for that route)
  }

  /** The breaker of route (a subtype, or undefined) on origin, made on first use; null when off for it. */
  get(origin, route) {
    let routes = this.byOrigin.get(origin);
    if (routes === undefined) {
      routes = new Map();
      this.byOrigin.set(origin, routes);
    }
    const key = route === undefined ? NONE : route;
    let entry = routes.get(key);
    if (entry !== undefined) return entry;
    const s = this.settingsFor(route);
    if (!s || !s.enabled) {
      routes.set(key, null);
      return null;
    }
    if (routes.size >= MAX_ROUTES && !this.known(route)) {
      entry = routes.get(OTHER);
      if (entry !== undefined) return entry;
      return this.make(routes, origin, OTHER, s);
    }
    return this.make(routes, origin, key, s);
  }

  make(routes, origin, key, settings) {
    const entry = {
      origin, route: key, circuit: null, since: Date.now(), lastError: null,
    };
    entry.circuit = new Circuit(settings, { now: this.now, onChange: (state, from) => this.changed(entry, state, from) });
    routes.set(key, entry);
    if (this.metrics && routes.size === 1) this.metrics.breakerState.labels(origin).set(0);
    return entry;
  }

  /**
   * True when a call of route to this origin now would be refused if another origin can take it.
   * An open circuit whose probe is due says false, so that an origin skipped for another one still
   * gets its probe on time.
   */
  isOpen(origin, route) {
    const entry = this.get(origin, route);
    return entry !== null && entry.circuit.isOpen();
  }

  /**
   * Runs send() through the circuit of route on origin: its outcome, or, when the circuit is open
   * and another origin may take the call (elsewhere), a host_error circuit_open at once.
   */
  run(origin, route, send, elsewhere = false) {
    const entry = this.get(origin, route);
    if (entry === null) return send();
    const c = entry.circuit;
    const ticket = c.allow(!elsewhere);
    if (ticket === REFUSED) return Promise.resolve(CIRCUIT_OPEN);
    return send().then((outcome) => {
      const v = verdict(outcome);
      if (v !== false && v !== null) entry.lastError = outcome.detail || outcome.reason;
      c.record(ticket, v);
      return outcome;
    }, (err) => {
      c.record(ticket, null);
      throw err;
    });
  }

  changed(entry, state, from) {
    entry.since = Date.now();
    if (this.metrics) this.metrics.breakerState.labels(entry.origin).set(STATE_VALUES[this.worst(entry.origin)]);
    if (!this.log) return;
    const which = `${entry.origin} (subtype ${entry.route})`;
    if (state === 'open') {
      const c = entry.circuit;
      let why = c.openedOn === SLOW ? 'most of its recent queries got no answer in time' : 'most of its recent queries failed';
      if (from === 'half-open') why = 'the probe failed';
      const again = `${why} (last: ${entry.lastError}); next probe in ${Math.round(c.delayMs)} ms`;
      this.log.warn(`backend circuit open for ${which}: ${again}; its queries go to another origin where there is one, and are still sent otherwise`, { from });
    } else if (state === 'half-open') {
      this.log.info(`backend circuit half-open for ${which}: probing with one query`, { from });
    } else {
      this.log.info(`backend circuit closed for ${which}: the backend answers again`, { from });
    }
  }

  /** The least healthy state among an origin's circuits. */
  worst(origin) {
    let worst = 0;
    for (const entry of this.byOrigin.get(origin).values()) {
      if (entry !== null) worst = Math.max(worst, STATE_VALUES[entry.circuit.state]);
    }
    return STATES[worst];
  }

  /**
   * Per origin: its least healthy state, since when and why, and one row per route
   * ({route, state, since, openedOn, lastError}; an array, since routes are the router's text).
   */
  toJSON() {
    const out = {};
    for (const [origin, routes] of this.byOrigin) {
      const rows = [];
      for (const entry of routes.values()) {
        if (entry === null) continue;
        const { state, openedOn } = entry.circuit;
        rows.push({
          route: entry.route, state, since: new Date(entry.since).toISOString(), openedOn, lastError: entry.lastError,
        });
      }
      if (rows.length === 0) continue;
      const state = this.worst(origin);
      const worst = rows.filter((r) => r.state === state).sort((a, b) => (a.since < b.since ? 1 : -1))[0];
      out[origin] = {
        state, since: worst.since, lastError: worst.lastError, routes: rows,
      };
    }
    return out;
  }
}

module.exports = { Breakers, verdict };
