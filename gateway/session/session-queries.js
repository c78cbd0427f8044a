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
const { channels, QueryView, labelsOf } = require('./diagnostics');

/** Answers at their deadline are written in groups of this many when hundreds are due at once. */
const EXPIRED_WRITE = 64;
const FAILED_LOGGED = 10;
const FAILED_WINDOW_MS = 10_000;

class SessionQueries {
  /**
   * What it needs of its session, given by it: id, log and debug (its logger and whether debug
   * lines are wanted); redact() (log.redact now); reply, its Replies (reply.js); link, its
   * RouterLink (send, flush); host: its gateway (SessionHost, host.js), whose backend and config
   * are read per query, so that a reload reaches them; afterSettle(), told after each reply; side(): the router's side, for
   * the queries' views; published: {start(view), settle(view, p, outcome, reply)}, which publish
   * as the session (ged145:query:start and :settle).
   */
  constructor({
    id, log, debug, redact, reply, link, host, afterSettle, side, published,
  }) {
    this.id = id;
    this.log = log;
    this.debug = debug;
    this.redact = redact;
    this.reply = reply;
    this.link = link;
    this.host = host;
    this.afterSettle = afterSettle;
    this.side = side;
    this.published = published;
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
    const { backend, config } = this.host;
    const p = this.inflight.add(q, config.deadlineMs, receivedAt);
    if (channels.queryStart.hasSubscribers) this.published.start(p.viewOf(this.side()));
    // It waited past its deadline for a slot: answered now (fallback, or the failure), and the
    // backend is not asked a question nobody waits for any more.
    const late = now !== undefined && p.deadlineAt <= now;
    if (this.debug && !late) this.log.debug('query', { ...labelsOf(p.view), ...describeQuery(q, this.id, this.redact()) });
    // group: the backend shares its connections out between sessions by it (engines/undici.js, Origin).
    p.dispatched(backend.dispatch(q, p.deadlineAt, this.id, p, !late));
    if (late) this.expire(p);
  }

  complete(p, outcome) {
    if (!this.inflight.settle(p)) return; // the deadline answered it already, or the router went away
    const [label, reply] = this.reply.forOutcome(p.query, outcome, labelsOf(p.view));
    this.finish(p, p.query, label, reply);
    // Many answers in one round of I/O can hold the deadline timer back: what is due is answered
    // here, between them, not after the round.
    this.inflight.expireIfDue();
  }

  expire(p, lateMs = 0) {
    if (!this.inflight.settle(p)) return;
    p.markExpired();
    // The backend's substitute (stale, fallback), or null; the handle aborts its request and drops a late answer.
    const instead = p.handle.atDeadline(lateMs);
    if (instead !== null) {
      const [label, reply] = this.reply.forOutcome(p.query, instead, labelsOf(p.view));
      this.finish(p, p.query, label, reply);
    } else {
      const [label, reply] = this.reply.failed(p.query, LABEL.DEADLINE, `backend did not answer within ${p.deadlineMs} ms`);
      this.finish(p, p.query, label, reply);
    }
    // Hundreds due at once (a burst's tail) leave in writes of EXPIRED_WRITE, not all after the last.
    if (++this.expiredCount % EXPIRED_WRITE === 0) this.link.flush();
  }

  /** The reply is written and the query counted; p is null for a query answered without going in flight (a duplicate, a wrong key). */
  finish(p, q, outcome, reply) {
    // First: the books can wait, the router cannot. An answer at the deadline leaves this tick.
    this.link.send(reply, this.inflight.size > 0, p !== null && p.expired);
    this.outcomes[outcome] = (this.outcomes[outcome] || 0) + 1;
    let view = p === null ? null : p.view;
    if (channels.querySettle.hasSubscribers) {
      if (view === null) view = p === null ? new QueryView(q, this.side(), performance.now()) : p.viewOf(this.side());
      this.published.settle(view, p, outcome, reply);
    }
    if (isFailed(outcome)) this.logFailed(q, outcome, labelsOf(view));
    if (p !== null) this.afterSettle();
  }

  /** A query in flight the router went away from (InFlight.abortAll): counted, never answered. */
  lost(p, outcome) {
    if (channels.querySettle.hasSubscribers) this.published.settle(p.viewOf(this.side()), p, outcome, null);
    this.logFailed(p.query, outcome, labelsOf(p.view));
  }

  /** The info line of a failed query, within the session's budget (the comment at the top); labels: its view's. */
  logFailed(q, outcome, labels) {
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
    const meta = {
      ...labels, outcome, status: FAILURE_STATUS[outcome] || null, ...describeQuery(q, this.id, this.redact()),
    };
    if (budget.notLogged > 0) {
      meta.notLogged = budget.notLogged; // failed queries since the last such line, counted, not written
      budget.notLogged = 0;
    }
    this.log.info(`query failed: ${outcome}`, meta);
  }

  /**
   * The connection is gone: the queries in flight are lost, and so are those waiting in the backlog
   * (waiting: what Backlog.drop() returned, {msg, receivedAt} each). Returns how many were lost.
   */
  abandon(waiting) {
    let n = this.inflight.size;
    this.inflight.abortAll(LABEL.LOST);
    for (const { msg, receivedAt } of waiting) {
      if (msg.typeId !== T.QUERY_REQ) continue;
      n++;
      const view = channels.queryStart.hasSubscribers || channels.querySettle.hasSubscribers ? new QueryView(msg, this.side(), receivedAt) : null;
      if (channels.queryStart.hasSubscribers) this.published.start(view);
      if (channels.querySettle.hasSubscribers) this.published.settle(view, null, LABEL.LOST, null);
      this.logFailed(msg, LABEL.LOST, labelsOf(view));
    }
    return n;
  }
}

module.exports = { SessionQueries };
