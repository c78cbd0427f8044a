'use strict';

// What the backend does for one query, owned here from the moment the session hands it over to
// its outcome, as undici's dispatch and handlers are (lib/core/request.js, lib/handler/): the
// session calls dispatch(query, deadlineAt, group, handler) and keeps the handle it gets back.
// The handle keeps the query's abort signal, the settings it started under (a reload does not
// change them midway), and what it would answer instead of a failure (a stale cached answer met
// on the way, the route's fallback). It calls handler.onOutcome(outcome) once, unless the session
// took a substitute at the deadline (atDeadline) or the router went away (abort) before.
//
// The session knows a query's deadline; only the backend knows what a deadline means for the
// origin: a timer that fired late says the event loop was busy, not that the origin was slow
// (DEADLINE_LATE, breakers.js), and the request is aborted once the replies due now are written.

const { QuerySignal, DEADLINE, DEADLINE_LATE } = require('./abort');
const { hostError, REASON, KIND } = require('./outcome');

/** A deadline timer firing later than this means the event loop was busy: no evidence against the origin. */
const TIMER_LAG_MS = 25;

const AT_DEADLINE = Object.freeze(hostError(REASON.DEADLINE, 'deadline'));
const internalError = (err) => ({ ...hostError(REASON.INTERNAL, 'internal error'), err });

class QueryHandle {
  /**
   * resolver: what turns the handle into an outcome (availability.js: resolve(handle) and
   * instead(outcome, handle)); handler: {onOutcome(outcome)}; group: whose query it is (a
   * session's id), for the engine's fair share of connections.
   */
  constructor(resolver, query, deadlineAt, group, handler) {
    this.resolver = resolver;
    this.query = query;
    this.deadlineAt = deadlineAt; // performance.now() time: a retry is tried only while enough of it is left
    this.handler = handler;
    this.signal = new QuerySignal(group);
    this.settings = resolver.settingsFor(query); // {fallback, cache}: its route's, else the top level's
    this.stale = undefined; // a cached answer past its ttlMs, kept for when the backend fails
    this.started = false;
    this.settled = false;
  }

  /** Asks the backend. */
  start() {
    this.started = true;
    let answer;
    try {
      answer = this.resolver.resolve(this);
    } catch (err) {
      answer = Promise.reject(err); // never an outcome inside dispatch(): the session has not its handle yet
    }
    answer.then((outcome) => this.answered(outcome), (err) => this.finish(internalError(err)));
  }

  /** The backend's outcome, or for a failed one its substitute (stale, fallback) where there is one. */
  answered(outcome) {
    if (outcome.kind === KIND.OK || this.settled) {
      this.finish(outcome);
      return;
    }
    let final;
    try {
      final = this.resolver.instead(outcome, this) || outcome;
    } catch (err) {
      final = internalError(err);
    }
    this.finish(final);
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
    return this.resolver.instead(AT_DEADLINE, this);
  }

  /** The router went away: the request is aborted now, and no outcome follows. */
  abort() {
    this.settled = true;
    this.signal.abort();
  }
}

// What a dispatcher without an availability policy (a test's double) has: no fallback, no cache.
const NO_POLICY = Object.freeze({ fallback: null, cache: null });

/**
 * What a session hands its queries to. QueryResolver (availability.js) is one; a test's double
 * extends this and gives resolve(handle) -> Promise<outcome>, and may give settingsFor(query)
 * and instead(outcome, handle) (the substitute for a failed outcome, or null).
 */
class Dispatcher {
  /**
   * One query handed to the backend: handler.onOutcome(outcome) is called once, unless the
   * session takes the handle's substitute at the deadline first. deadlineAt: performance.now()
   * time; group: whose query it is (a session's id). send: false for a query whose deadline
   * passed while it waited for a slot, so that the backend is not asked a question nobody waits
   * for any more.
   */
  dispatch(query, deadlineAt, group, handler, send = true) {
    const handle = new QueryHandle(this, query, deadlineAt, group, handler);
    if (send) handle.start();
    return handle;
  }

  settingsFor() {
    return NO_POLICY;
  }

  instead() {
    return null;
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

module.exports = { QueryHandle, Dispatcher };
