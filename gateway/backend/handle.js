'use strict';

// One query's life on the backend side, from the moment the session hands it over to its
// outcome, as undici's request keeps its own state (lib/core/request.js): the session calls
// Backend.dispatch(query, deadlineAt, group, handler) and keeps the handle it gets back. The
// handle keeps the query's abort signal and its substitutes (substitutes.js: what it would answer
// instead of a failure), sends the query down the backend chain (layers/) and calls
// handler.onOutcome(outcome) once, unless the session took the deadline's answer (atDeadline) or
// the router went away (abort) before.
//
// The session knows a query's deadline; only the backend knows what a deadline means for the
// origin: a timer that fired late says the event loop was busy, not that the origin was slow
// (DEADLINE_LATE, breakers.js), and the request is aborted once the replies due now are written.

const { QuerySignal, DEADLINE, DEADLINE_LATE } = require('./abort');
const { hostError, REASON } = require('./outcome');

/** A deadline timer firing later than this means the event loop was busy: no evidence against the origin. */
const TIMER_LAG_MS = 25;

const AT_DEADLINE = Object.freeze(hostError(REASON.DEADLINE, 'deadline'));
const internalError = (err) => ({ ...hostError(REASON.INTERNAL, 'internal error'), err });

class QueryHandle {
  /**
   * chain: the backend's layers, from the top (dispatch(ctx) -> Promise<outcome>); handler:
   * {onOutcome(outcome)}; group: whose query it is (a session's id), for the engine's fair share
   * of connections; substitutes: a Substitutes, or null for a route with neither cache nor fallback.
   */
  constructor(chain, query, deadlineAt, group, handler, substitutes) {
    this.chain = chain;
    this.query = query;
    this.deadlineAt = deadlineAt; // performance.now() time: a retry is tried only while enough of it is left
    this.handler = handler;
    this.signal = new QuerySignal(group);
    this.substitutes = substitutes;
    this.started = false;
    this.settled = false;
  }

  /** Sends the query down the chain. */
  start() {
    this.started = true;
    let outcome;
    try {
      outcome = this.chain.dispatch({
        query: this.query, signal: this.signal, deadlineAt: this.deadlineAt, substitutes: this.substitutes,
      });
    } catch (err) {
      outcome = Promise.reject(err); // never an outcome inside dispatch(): the session has not its handle yet
    }
    outcome.then((o) => this.finish(o), (err) => this.finish(internalError(err)));
  }

  finish(outcome) {
    if (this.settled) return;
    this.settled = true;
    this.handler.onOutcome(outcome);
  }

  /**
   * The deadline passed with the backend silent: the substitute outcome (stale, fallback) or
   * null, now. The backend request is aborted after the replies due now are written (an abort
   * closes that backend connection, no work to do ahead of a router waiting for its reply), and
   * its late answer is dropped. lateMs: how long after the deadline the session's timer fired.
   */
  atDeadline(lateMs = 0) {
    this.settled = true;
    if (this.started) abortSoon(this, lateMs > TIMER_LAG_MS ? DEADLINE_LATE : DEADLINE);
    return this.substitutes === null ? null : this.substitutes.forFailure(AT_DEADLINE);
  }

  /** The router went away: the request is aborted now, and no outcome follows. */
  abort() {
    this.settled = true;
    this.signal.abort();
  }
}

// Requests to abort once this turn of the event loop has written its replies: [handle, reason] pairs.
let toAbort = [];

function abortSoon(handle, reason) {
  if (toAbort.push(handle, reason) === 2) setImmediate(abortDue);
}

function abortDue() {
  const due = toAbort;
  toAbort = [];
  for (let i = 0; i < due.length; i += 2) due[i].signal.abort(due[i + 1]);
}

module.exports = { QueryHandle };
