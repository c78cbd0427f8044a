'use strict';

// One lane per route per backend origin: its circuit (circuit.js has the policy and why), its pace
// (pace.js: Retry-After pauses and the rate learnt from 429s) and its health (health.js); the glue
// between them and the backend calls, the log, /health and the circuit channel (diagnostics.js).
//
// Per route, as Hystrix counts per command: a subtype whose calls fail does not open the circuit
// of a healthy subtype on the same origin, and a route's own `breaker` settings are its own. The
// route key is the subtype (a router may send any subtype to the default contract, so at most
// MAX_ROUTES keys are made per origin; the rest share one).
//
// An open circuit refuses a call only where another origin can take it (failover or balance):
// the call goes there. With no other origin it is sent anyway (docs/reliability.md): a
// refusal would answer the same failure, or the same stale or fallback answer, only sooner, and
// would miss every answer the backend gives once it is back (a flapping backend, 1 s up and 1 s
// down, was answered half as often with the circuit as without). Such a circuit closes on the
// first answer once it has been open breaker.minOpenMs, so that it never flaps faster than that.
// The circuit still tells the operator (log, /health, metrics) and still probes an origin that
// failover skips. Its log lines come at most one per change (closed->open, ...) per
// LOG_EVERY_MS, the next line counting the changes folded in.
//
// A pause or the learnt rate, unlike the circuit, refuses calls even with one origin: there the
// origin itself said that more calls will not be answered (429, 503 with Retry-After).
//
// What counts against a route is what says something about it (verdict below): a refused or
// reset connection, a 5xx, a 429, a proxy's page, a body that is not JSON are failures; a request
// that was on the wire for a good part of its time and got no answer is slow. A query that spent
// its time waiting inside the gateway (for a free connection, or for a busy event loop) is no
// evidence, and neither is a router that went away; the API's own 4xx is an answer.

const { performance } = require('node:perf_hooks');
const {
  Circuit, REFUSED, FAILED, SLOW,
} = require('./circuit');
const {
  Pace, PROBE, PAUSED,
} = require('./pace');
const {
  KIND, REASON, hostError, gaveUp,
} = require('./outcome');
const { channels } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');

const STATE_VALUES = Object.freeze({ closed: 0, 'half-open': 1, open: 2 }); // worse is higher
const STATES = Object.freeze(['closed', 'half-open', 'open']);
const CIRCUIT_OPEN = Object.freeze(hostError(REASON.CIRCUIT_OPEN, 'backend circuit open'));
const PAUSED_OUTCOME = Object.freeze(hostError(REASON.PAUSED, 'backend asked to wait (Retry-After): not asked'));
const OVER_RATE_OUTCOME = Object.freeze(hostError(REASON.OVER_RATE, 'backend rate limit learnt from its 429s reached: not asked'));
/** A lane's circuit logs at most one line per state per this long. */
const LOG_EVERY_MS = 60_000;
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
   * known(route): a configured route (always a lane of its own); pacing: {retryAfter,
   * adaptiveRate} (pace.js; null: none); health: a BackendHealth (null: none); now: a clock for tests;
   * owner: what its circuit messages carry as `gateway` (diagnostics.js).
   */
  constructor(settings, {
    log = SILENT_LOG, owner = null, settingsFor = () => settings, known = () => false, pacing = null, health = null, now = monotonicMs,
  } = {}) {
    this.settingsFor = settingsFor;
    this.known = known;
    this.log = log;
    this.owner = owner;
    this.pacing = pacing || NO_PACING;
    this.health = health;
    this.now = now;
    this.byOrigin = new Map(); // origin -> Map(route key -> lane)
  }

  /** The lane of route (a subtype, or undefined) on origin, made on first use; its circuit null when the breaker is off for it. */
  get(origin, route) {
    let routes = this.byOrigin.get(origin);
    if (routes === undefined) {
      routes = new Map();
      this.byOrigin.set(origin, routes);
    }
    const key = route === undefined ? NONE : route;
    const entry = routes.get(key);
    if (entry !== undefined) return entry;
    if (routes.size >= MAX_ROUTES && !this.known(route)) return routes.get(OTHER) || this.make(routes, origin, OTHER, this.settingsFor(route));
    return this.make(routes, origin, key, this.settingsFor(route));
  }

  make(routes, origin, key, settings) {
    const entry = {
      origin,
      route: key,
      circuit: null,
      pace: new Pace(this.pacing, this.now),
      health: this.health === null ? NO_HEALTH : this.health.lane(origin, key),
      since: Date.now(),
      lastError: null,
      logged: null, // {at: {change: ms}, folded}: when each change was last logged, and how many since were not (changed())
    };
    if (settings && settings.enabled) {
      entry.circuit = new Circuit(settings, { now: this.now, onChange: (state, from) => this.changed(entry, state, from) });
    }
    routes.set(key, entry);
    return entry;
  }

  /**
   * True when a call of route to this origin now would be refused if another origin can take it.
   * An open circuit whose probe is due says false, so that an origin skipped for another one still
   * gets its probe on time.
   */
  isOpen(origin, route) {
    const entry = this.get(origin, route);
    return (entry.circuit !== null && entry.circuit.isOpen()) || entry.pace.pausedUntil > this.now();
  }

  /**
   * Runs send() through the lane of route on origin: its outcome; or at once, when the origin
   * asked for a pause or the learnt rate is reached, a host_error paused or over_rate; or, when
   * the circuit is open and another origin may take the call (elsewhere), a host_error circuit_open.
   */
  run(origin, route, send, elsewhere = false) {
    const entry = this.get(origin, route);
    const pass = entry.pace.allow();
    if (pass < 0) return Promise.resolve(pass === PAUSED ? PAUSED_OUTCOME : OVER_RATE_OUTCOME);
    const c = entry.circuit;
    const ticket = c === null ? 0 : c.allow(!elsewhere);
    if (ticket === REFUSED && c !== null) {
      entry.pace.cancel(pass);
      return Promise.resolve(CIRCUIT_OPEN);
    }
    return send().then((outcome) => {
      if (settle(entry, pass, ticket, outcome)) this.paced(entry);
      return outcome;
    }, (err) => {
      entry.pace.cancel(pass);
      if (c !== null) c.record(ticket, null);
      throw err;
    });
  }

  /**
   * A state change of a lane's circuit: its channel at once; a log line unless this lane logged
   * the same change (closed->open, half-open->open, ...) within LOG_EVERY_MS (a flapping circuit:
   * those changes are counted in its next line).
   */
  changed(entry, state, from) {
    entry.since = Date.now();
    if (channels.circuit.hasSubscribers) {
      channels.circuit.publish({
        gateway: this.owner, route: entry.route, origin: entry.origin, from, to: state,
      });
    }
    const now = Date.now();
    const change = `${from}->${state}`;
    const last = entry.logged;
    if (last !== null && now - (last.at[change] || -Infinity) < LOG_EVERY_MS) {
      last.folded++;
      return;
    }
    const folded = last !== null && last.folded > 0 ? { changesNotLogged: last.folded } : {};
    if (last === null) entry.logged = { at: { [change]: now }, folded: 0 };
    else {
      last.at[change] = now;
      last.folded = 0;
    }
    this.write(entry, state, from, folded);
  }

  write(entry, state, from, folded) {
    const which = `${entry.origin} (subtype ${entry.route})`;
    const meta = { from, ...folded };
    if (state === 'open') {
      const c = entry.circuit;
      let why = c.openedOn === SLOW ? 'most of its recent queries got no answer in time' : 'most of its recent queries failed';
      if (from === 'half-open') why = 'the probe failed';
      const again = `${why} (last: ${entry.lastError}); next probe in ${Math.round(c.delayMs)} ms`;
      this.log.warn(`backend circuit open for ${which}: ${again}; its queries go to another origin where there is one, and are still sent otherwise`, meta);
    } else if (state === 'half-open') {
      this.log.info(`backend circuit half-open for ${which}: probing with one query`, meta);
    } else {
      this.log.info(`backend circuit closed for ${which}: the backend answers again`, meta);
    }
  }

  /** A lane's pace changed: a warning, at most one per LOG_EVERY_MS per lane and kind, counting the rest. */
  paced(entry) {
    const { pace } = entry;
    const paused = pace.pausedUntil !== 0;
    const change = paused ? 'paused' : 'rate';
    const now = Date.now();
    if (entry.logged === null) entry.logged = { at: {}, folded: 0 };
    const last = entry.logged;
    if (now - (last.at[change] || -Infinity) < LOG_EVERY_MS) {
      last.folded++;
      return;
    }
    last.at[change] = now;
    const meta = last.folded > 0 ? { changesNotLogged: last.folded } : {};
    last.folded = 0;
    const which = `${entry.origin} (subtype ${entry.route})`;
    const { pausedForMs, ratePerSecond } = pace.toJSON();
    if (paused) {
      this.log.warn(`backend ${which} asked to wait (Retry-After): no calls for ${pausedForMs} ms, then one probe; `
        + 'its queries get their substitute at once', meta);
    } else {
      this.log.warn(`backend ${which} answered 429 (rate_limited): at most ${ratePerSecond} calls a second from now, learnt from its 429s; `
        + 'the rest get their substitute at once', meta);
    }
  }

  /** The least healthy state among an origin's circuits. */
  worst(origin) {
    let worst = 0;
    for (const entry of this.byOrigin.get(origin).values()) {
      if (entry.circuit !== null) worst = Math.max(worst, STATE_VALUES[entry.circuit.state]);
    }
    return STATES[worst];
  }

  /** Per origin with a circuit, its least healthy state: {origin: 'closed' | 'half-open' | 'open'} (ged145_backend_circuit_state). */
  states() {
    const out = {};
    for (const [origin, routes] of this.byOrigin) {
      for (const entry of routes.values()) {
        if (entry.circuit !== null) {
          out[origin] = this.worst(origin);
          break;
        }
      }
    }
    return out;
  }

  /** Per origin, the lanes whose pace says something (paused, a learnt rate, calls refused): [{route, pausedForMs, ratePerSecond, pauses, refused}]. */
  pacingJSON() {
    const out = {};
    for (const [origin, routes] of this.byOrigin) {
      const rows = [];
      for (const entry of routes.values()) if (entry.pace.active()) rows.push({ route: entry.route, ...entry.pace.toJSON() });
      if (rows.length > 0) out[origin] = rows;
    }
    return out;
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
        if (entry.circuit === null) continue;
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

/** The end of a call through a lane: its circuit, pace and health told; true when its pace changed (a new pause, a rate cut). */
function settle(entry, pass, ticket, outcome) {
  const v = verdict(outcome);
  if (v === false) entry.health.success();
  else if (v !== null) {
    entry.lastError = outcome.detail || outcome.reason;
    entry.health.failure(healthText(outcome, entry.origin));
  }
  if (entry.circuit !== null) entry.circuit.record(ticket, v);
  if (pass !== PROBE && outcome.kind !== KIND.HOST_ERROR) return false;
  const { pace } = entry;
  const before = pace.pauses + pace.cuts;
  pace.record(pass, outcome.reason === REASON.RATE_LIMITED, outcome.retryAfterMs, v !== null);
  return pace.pauses + pace.cuts !== before;
}

/** "unreachable: ECONNREFUSED 10.0.0.5:8080": the reason and the detail, without the origin the lane already names. */
function healthText({ reason, detail }, origin) {
  if (!detail) return reason;
  const suffix = ` (${origin})`;
  return `${reason}: ${detail.endsWith(suffix) ? detail.slice(0, -suffix.length) : detail}`;
}

const NO_PACING = Object.freeze({
  retryAfter: { enabled: false, maxMs: 0 }, adaptiveRate: { enabled: false, minPerSecond: 1, releaseAfterMs: 60_000 },
});
const NO_HEALTH = Object.freeze({ success() {}, failure() {} });

module.exports = { Breakers, verdict };
