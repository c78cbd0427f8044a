'use strict';

// Whether the backend is answering, as the queries see it, per route per origin (the lanes that
// breakers.js keeps, each with its circuit) and derived from them: an origin is as healthy as
// its least healthy lane, the process as its least healthy origin. A success on one origin never
// hides another that fails (a process-wide flag reset by any answer did).
//
// A run of FAIL_AFTER host errors in a row on a lane (5xx, 429, unreachable, reset, bad JSON,
// deadline) makes it `failing`; its first answer (2xx or the API's own 4xx) makes it `reachable`
// again. The failing line (a warning) names the origin and route, what the router gets meanwhile,
// and the origins that still answer; it comes at most once per LOG_EVERY_MS per lane (a flapping
// backend cannot flood the log: the next line says how many changes it folded in). The recovery
// after a logged failure is logged when it happens, at info. ged145_backend_up shows each origin
// and lane, and the process's worst without labels (ops/backend-metrics.js reads lanes()).
//
// A state is only as good as its evidence: with no query to judge it for IDLE_AFTER_MS (a
// subtype that timed out once and was not asked again, a quiet night), /health and /status say
// `idle` instead, with `lastState` (what the last queries said) and how old they are
// (`lastQueryAt`, `evidenceAgeS`), so that an old failure is never shown as a failure now. The
// lane keeps its verdict meanwhile: the next failure continues its run, the next answer is
// logged as a recovery, and ged145_backend_up (a gauge an alert reads) goes on reading it.

const { SILENT_LOG } = require('./silent-log');

const FAIL_AFTER = 5;
/** What a lane hands over to its successor at a reload. */
const KEPT = ['state', 'since', 'consecutiveFailures', 'failuresInState', 'answers', 'lastError', 'lastQueryAt', 'loggedAt', 'loggedState'];
const LOG_EVERY_MS = 10_000;
/** Evidence older than this says nothing about now: the state shown is `idle`. */
const IDLE_AFTER_MS = 60_000;
const REACHABLE = 'reachable';
const FAILING = 'failing';
const IDLE = 'idle';
const iso = (ms) => (ms === null ? null : new Date(ms).toISOString());
/** Whole seconds from ms to now; never negative (a clock stepped back). */
const ageS = (ms, now) => (ms === null ? null : Math.max(0, Math.round((now - ms) / 1000)));

class LaneHealth {
  /**
   * board: what it needs of the BackendHealth it belongs to: {log, routerGets, failAfter,
   * logEveryMs, idleAfterMs, changed(lane), answering(origin)}; origin, route: which lane (route:
   * a subtype, or '(none)').
   */
  constructor(board, origin, route) {
    this.board = board;
    this.origin = origin;
    this.route = route;
    this.state = REACHABLE;
    this.since = Date.now();
    this.consecutiveFailures = 0;
    this.failuresInState = 0; // failed queries since the state last changed
    this.answers = 0;
    this.lastError = null;
    this.lastQueryAt = null; // the last outcome that judged this lane (Date.now()), null before the first
    this.loggedAt = 0;
    this.loggedState = REACHABLE;
    this.unlogged = 0; // changes folded into the next line
    this.logTimer = null;
  }

  /** A reload: this lane goes on from the one it replaces, as that one was. */
  takeOver(previous) {
    for (const k of KEPT) this[k] = previous[k];
  }

  success() {
    this.lastQueryAt = Date.now();
    this.consecutiveFailures = 0;
    this.answers++;
    if (this.state === FAILING) this.change(REACHABLE);
  }

  failure(reason) {
    this.lastQueryAt = Date.now();
    this.consecutiveFailures++;
    this.failuresInState++;
    this.lastError = reason;
    if (this.state === REACHABLE && this.consecutiveFailures >= this.board.failAfter) this.change(FAILING);
  }

  change(to) {
    const from = this.state;
    const failed = this.failuresInState;
    const lasted = Date.now() - this.since;
    this.state = to;
    this.since = Date.now();
    this.failuresInState = 0;
    this.board.changed(this);
    // Good news after a logged failure goes out at once; otherwise one line per logEveryMs.
    if ((to === REACHABLE && this.loggedState === FAILING) || Date.now() - this.loggedAt >= this.board.logEveryMs) this.write({ from, failed, lasted });
    else {
      this.unlogged++;
      if (this.logTimer === null) {
        this.logTimer = setTimeout(() => this.flush(), this.board.logEveryMs - (Date.now() - this.loggedAt));
        this.logTimer.unref();
      }
    }
  }

  /** After a quiet spell: log where the lane ended up, if the last line said otherwise. */
  flush() {
    this.logTimer = null;
    if (this.state !== this.loggedState) this.write({});
    else this.unlogged = 0;
  }

  write({ from, failed, lasted }) {
    const { log } = this.board;
    this.loggedAt = Date.now();
    this.loggedState = this.state;
    const folded = this.unlogged > 0 ? { changesNotLogged: this.unlogged } : {};
    this.unlogged = 0;
    const where = { origin: this.origin, route: this.route };
    if (this.state === FAILING) {
      const what = `${this.consecutiveFailures} queries in a row got no answer (last: ${this.lastError})`;
      const others = this.board.answering(this.origin);
      const meanwhile = others.length > 0 ? `; ${others.join(', ')} still answering` : '';
      log.warn(`backend failing: ${this.origin} (subtype ${this.route}): ${what}; the router gets ${this.board.routerGets}${meanwhile}`, {
        ...where, consecutiveFailures: this.consecutiveFailures, lastError: this.lastError, ...(others.length > 0 ? { answering: others } : {}), ...folded,
      });
    } else {
      const after = from === FAILING ? { failedQueries: failed, failingForMs: lasted } : {};
      log.info(`backend reachable again: ${this.origin} (subtype ${this.route})`, { ...where, ...after, ...folded });
    }
  }

  /** The state as of now: its verdict while a query judged it within idleAfterMs, else idle. */
  shownState(now) {
    return this.lastQueryAt !== null && now - this.lastQueryAt < this.board.idleAfterMs ? this.state : IDLE;
  }

  toJSON(now = Date.now()) {
    return {
      route: this.route,
      state: this.shownState(now),
      lastState: this.state,
      since: iso(this.since),
      lastQueryAt: iso(this.lastQueryAt),
      evidenceAgeS: ageS(this.lastQueryAt, now),
      consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError,
    };
  }

  close() {
    if (this.logTimer !== null) clearTimeout(this.logTimer);
    this.logTimer = null;
  }
}

class BackendHealth {
  /**
   * routerGets: what the router gets while the backend fails ("E_AG_HOST_ERROR1", "the fallback answer"...).
   * previous: the health this one replaces (a reload); keeps(origin): whether this backend still
   * calls that origin, whose lanes then go on from their previous state (/health and
   * ged145_backend_up read this one from now on, and agree).
   */
  constructor({
    log = SILENT_LOG, failAfter = FAIL_AFTER, logEveryMs = LOG_EVERY_MS, idleAfterMs = IDLE_AFTER_MS, routerGets = 'E_AG_HOST_ERROR1', previous = null,
    keeps = () => false,
  } = {}) {
    this.log = log;
    this.routerGets = routerGets;
    this.failAfter = failAfter;
    this.logEveryMs = logEveryMs;
    this.idleAfterMs = idleAfterMs;
    // What each lane reads of its board: the settings, and the two calls back.
    this.board = {
      log, routerGets, failAfter, logEveryMs, idleAfterMs, changed: (lane) => this.changed(lane), answering: (origin) => this.answering(origin),
    };
    this.byOrigin = new Map(); // origin -> Map(route -> its LaneHealth)
    this.failing = 0; // lanes failing now
    this.since = Date.now(); // when the process-wide state last changed
    if (previous !== null) this.takeOver(previous, keeps);
  }

  /** A reload: the lanes of the origins still called, as they were. */
  takeOver(previous, keeps) {
    for (const lane of previous.lanes()) {
      if (!keeps(lane.origin)) continue;
      const mine = this.lane(lane.origin, lane.route);
      mine.takeOver(lane);
      if (mine.state === FAILING) this.failing++;
    }
    if (this.failing > 0) this.since = previous.since;
  }

  /** A lane's health, made by breakers.js with the lane (or kept from before a reload). */
  lane(origin, route) {
    let lanes = this.byOrigin.get(origin);
    if (lanes === undefined) {
      lanes = new Map();
      this.byOrigin.set(origin, lanes);
    }
    let lane = lanes.get(route);
    if (lane === undefined) {
      lane = new LaneHealth(this.board, origin, route);
      lanes.set(route, lane);
    }
    return lane;
  }

  changed(lane) {
    const before = this.failing;
    this.failing += lane.state === FAILING ? 1 : -1;
    if ((before === 0) !== (this.failing === 0)) this.since = Date.now();
  }

  /** The process's state: the worst of its origins'. */
  get state() {
    return this.failing > 0 ? FAILING : REACHABLE;
  }

  /** An origin's state: the worst of its lanes'. */
  originState(origin) {
    const lanes = this.byOrigin.get(origin);
    if (lanes !== undefined) for (const lane of lanes.values()) if (lane.state === FAILING) return FAILING;
    return REACHABLE;
  }

  /** Origins other than `but` whose lanes all answer and have answered at least once. */
  answering(but) {
    const out = [];
    for (const [origin, lanes] of this.byOrigin) {
      if (origin === but) continue;
      let answered = false;
      let failing = false;
      for (const lane of lanes.values()) {
        if (lane.answers > 0) answered = true;
        if (lane.state === FAILING) failing = true;
      }
      if (answered && !failing) out.push(origin);
    }
    return out;
  }

  /** Every lane, for ged145_backend_up. */
  * lanes() {
    for (const lanes of this.byOrigin.values()) yield* lanes.values();
  }

  /** Per origin: its state as of now and its verdict, and its lanes' (for /health and /status). */
  originsJSON(now = Date.now()) {
    const out = {};
    for (const [origin, lanes] of this.byOrigin) {
      out[origin] = {
        ...shown(lanes.values(), now), lastState: this.originState(origin), routes: [...lanes.values()].map((l) => l.toJSON(now)),
      };
    }
    return out;
  }

  /** The process-wide view: its state as of now and its verdict, and for a failing one the lane that failed last. */
  toJSON(now = Date.now()) {
    let worst = null; // the failing lane that failed last, else the one with the longest run of failures
    for (const lane of this.lanes()) {
      if (worst === null) worst = lane;
      else if (lane.state === FAILING) {
        if (worst.state !== FAILING || lane.since > worst.since) worst = lane;
      } else if (worst.state !== FAILING && lane.consecutiveFailures > worst.consecutiveFailures) worst = lane;
    }
    return {
      ...shown(this.lanes(), now),
      lastState: this.state,
      since: iso(this.since),
      consecutiveFailures: worst === null ? 0 : worst.consecutiveFailures,
      lastError: worst === null ? null : worst.lastError,
      failing: [...this.lanes()].filter((l) => l.shownState(now) === FAILING).map((l) => ({ origin: l.origin, route: l.route })),
    };
  }

  close() {
    for (const lane of this.lanes()) lane.close();
  }
}

/**
 * {state, lastQueryAt, evidenceAgeS} of several lanes as of now: failing when one failing lane has
 * fresh evidence, else reachable when one lane has, else idle; the evidence is the newest query's.
 */
function shown(lanes, now) {
  let state = IDLE;
  let last = null;
  for (const lane of lanes) {
    const s = lane.shownState(now);
    if (s === FAILING || (s === REACHABLE && state === IDLE)) state = s;
    if (lane.lastQueryAt !== null && (last === null || lane.lastQueryAt > last)) last = lane.lastQueryAt;
  }
  return { state, lastQueryAt: iso(last), evidenceAgeS: ageS(last, now) };
}

module.exports = { BackendHealth };
