'use strict';

// The queries of one session on their way through: dispatched to the backend side, each answered
// exactly once by whichever comes first of its outcome, its deadline, or the end of the
// connection (inflight.js keeps that rule), the reply written and the query counted by its
// `outcome` label and published (ged145:query:settle). The session decides whether a query is
// taken at all (an open session, the key, a duplicate) and is told after each settle.
//
// A query the router got no usable answer for (every outcome but the answered ones and the API's
// own app_error) is one info line, with its trace id when traced and its caller data as log.redact
// allows; a backend that is down fails thousands a second, so a session writes the first
// FAILED_LOGGED of each FAILED_WINDOW_MS and counts the rest into its next line (`notLogged`).

const { performance } = require('node:perf_hooks');
const { MESSAGE_TYPES: T } = require('../../lib/protocol');
const { LABEL, FAILURE_STATUS, isFailed } = require('../backend/outcome');
const { InFlight } = require('./inflight');
const { describeQuery } = require('./redact');
const { channels, labelsOf, publishQueryStart, publishQuerySettle } = require('./diagnostics');

/** Answers at their deadline are written in groups of this many when hundreds are due at once. */
const EXPIRED_WRITE = 64;
const FAILED_LOGGED = 10;
const FAILED_WINDOW_MS = 10_000;

class SessionQueries {
  /** session: the owner (its link, gateway, log and afterSettle); reply: its Replies (reply.js). */
  constructor(session, reply) {
    this.session = session;
    this.reply = reply;
    this.inflight = new InFlight({
      onDeadline: (p, lateMs) => this.expire(p, lateMs),
      onOutcome: (p, outcome) => this.complete(p, outcome),
      onLost: (p, outcome) => this.lost(p, outcome),
    });
    this.outcomes = {}; // replies by their `outcome` label (ok, cached, stale, fallback, host_error...): ok and failed are read from it
    this.expiredCount = 0; // queries answered at their deadline: every EXPIRED_WRITE of them, the link flushes
    this.failedLog = { windowAt: -Infinity, written: 0, notLogged: 0 }; // the failed-query lines' budget
  }

  /**
   * q goes in flight: receivedAt, when its bytes arrived (performance.now()), starts its deadline;
   * now: given for a query that waited in the backlog, answered at once if its deadline has passed.
   */
  dispatch(q, receivedAt, now) {
    const s = this.session;
    const { backend, config } = s.gateway;
    const p = this.inflight.add(q, config.deadlineMs, receivedAt);
    if (channels.queryStart.hasSubscribers) publishQueryStart(s, q, p.start);
    // It waited past its deadline for a slot: answered now (fallback, or the failure), and the
    // backend is not asked a question nobody waits for any more.
    const late = now !== undefined && p.deadlineAt <= now;
    if (s.debug && !late) s.log.debug('query', { ...labelsOf(q), ...describeQuery(q, s.id, s.redact) });
    // group: the backend shares its connections out between sessions by it (engines/undici.js, Origin).
    p.handle = backend.dispatch(q, p.deadlineAt, s.id, p, !late);
    if (late) this.expire(p);
  }

  complete(p, outcome) {
    if (!this.inflight.settle(p)) return; // the deadline answered it already, or the router went away
    const [label, reply] = this.reply.forOutcome(p.query, outcome);
    this.finish(p, p.query, label, reply);
    // Many answers in one round of I/O can hold the deadline timer back: what is due is answered
    // here, between them, not after the round.
    this.inflight.expireIfDue();
  }

  expire(p, lateMs = 0) {
    if (!this.inflight.settle(p)) return;
    p.expired = true;
    // The backend's substitute (stale, fallback), or null; the handle aborts its request and drops a late answer.
    const instead = p.handle.atDeadline(lateMs);
    if (instead !== null) {
      const [label, reply] = this.reply.forOutcome(p.query, instead);
      this.finish(p, p.query, label, reply);
    } else {
      const [label, reply] = this.reply.failed(p.query, LABEL.DEADLINE, `backend did not answer within ${p.deadlineMs} ms`);
      this.finish(p, p.query, label, reply);
    }
    // Hundreds due at once (a burst's tail) leave in writes of EXPIRED_WRITE, not all after the last.
    if (++this.expiredCount % EXPIRED_WRITE === 0) this.session.link.flush();
  }

  /** The reply is written and the query counted; p is null for a query answered without going in flight (a duplicate, a wrong key). */
  finish(p, q, outcome, reply) {
    const s = this.session;
    // First: the books can wait, the router cannot. An answer at the deadline leaves this tick.
    s.link.send(reply, this.inflight.size > 0, p !== null && p.expired);
    this.outcomes[outcome] = (this.outcomes[outcome] || 0) + 1;
    if (channels.querySettle.hasSubscribers) publishQuerySettle(s, q, p, outcome, reply);
    if (isFailed(outcome)) this.logFailed(q, outcome);
    if (p !== null) s.afterSettle();
  }

  /** A query in flight the router went away from (InFlight.abortAll): counted, never answered. */
  lost(p, outcome) {
    if (channels.querySettle.hasSubscribers) publishQuerySettle(this.session, p.query, p, outcome);
    this.logFailed(p.query, outcome);
  }

  /** The info line of a failed query, within the session's budget (the comment at the top). */
  logFailed(q, outcome) {
    const budget = this.failedLog;
    const now = performance.now();
    if (now - budget.windowAt >= FAILED_WINDOW_MS) {
      budget.windowAt = now;
      budget.written = 0;
    }
    if (budget.written >= FAILED_LOGGED) {
      budget.notLogged++;
      return;
    }
    budget.written++;
    const s = this.session;
    const meta = {
      ...labelsOf(q), outcome, status: FAILURE_STATUS[outcome] || null, ...describeQuery(q, s.id, s.redact),
    };
    if (budget.notLogged > 0) {
      meta.notLogged = budget.notLogged; // failed queries since the last such line, counted, not written
      budget.notLogged = 0;
    }
    s.log.info(`query failed: ${outcome}`, meta);
  }

  /**
   * The connection is gone: the queries in flight are lost, and so are those waiting in the backlog
   * (waiting: what Backlog.drop() returned, {msg, receivedAt} each). Returns how many were lost.
   */
  abandon(waiting) {
    let n = this.inflight.size;
    this.inflight.abortAll(LABEL.LOST);
    const s = this.session;
    for (const { msg, receivedAt } of waiting) {
      if (msg.typeId !== T.QUERY_REQ) continue;
      n++;
      if (channels.queryStart.hasSubscribers) publishQueryStart(s, msg, receivedAt);
      if (channels.querySettle.hasSubscribers) publishQuerySettle(s, msg, null, LABEL.LOST);
      this.logFailed(msg, LABEL.LOST);
    }
    return n;
  }
}

module.exports = { SessionQueries };
