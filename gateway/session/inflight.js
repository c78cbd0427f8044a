'use strict';

// The queries of one session that wait for the backend, and the exactly-once rule: a query is
// settled once, by whichever comes first of its answer, its deadline, or the end of the
// connection; everything that comes after finds it settled and does nothing.
//
// Deadlines: one timer per session, not one per query. Queries get the same deadlineMs, so their
// deadlines come in arrival order, the order of the book's list: the timer waits for the oldest
// one, and when it fires, expires what is due and waits again for the oldest left. A query
// answered in time costs no timer at all. After a reload that shortens deadlineMs, a newer query
// can be due before an older one; until the session has no query in flight, each firing then
// looks at every query (`ordered` false).
//
// The book is a list of its PendingQuery objects linked to each other, not a Set: a Set turned
// over thirty thousand times a second kept its settled queries alive past the young generation
// (V8 promoted 360 KB per young collection at 32 in flight, with a full collection every quarter
// second; docs/performance.md), and a settled query linked to nothing dies young.

const { performance } = require('node:perf_hooks');
const { QueryView } = require('./diagnostics');

/**
 * One query in flight, as the session sees it: the query, when it is due, whether it is settled,
 * and the backend's handle for it (backend/handle.js), whose outcome it takes (onOutcome). Its
 * fields change through its own methods: the book settles it, the session gives it its handle.
 */
class PendingQuery {
  /**
   * onOutcome(p, outcome): its book's, called with the backend's outcome; start: when the query's
   * bytes arrived (performance.now() time), and deadlineMs from then to be answered in.
   */
  constructor(onOutcome, query, start, deadlineMs) {
    this.outcomeTo = onOutcome;
    this.query = query;
    this.start = start;
    this.done = false;
    this.expired = false; // settled by its deadline
    this.deadlineMs = deadlineMs;
    this.deadlineAt = start + deadlineMs; // performance.now() time
    this.handle = null; // the backend's, once the session dispatched the query (dispatched())
    this.view = null; // the query as diagnostics subscribers see it, once one needed it (viewOf())
    this.prev = null; // its neighbours in its book's list while it is in flight (InFlight)
    this.next = null;
  }

  /** Its QueryView (diagnostics.js), made the first time a channel with subscribers needs it; side: the router's. */
  viewOf(side) {
    if (this.view === null) this.view = new QueryView(this.query, side, this.start);
    return this.view;
  }

  /** Seconds since the query arrived. */
  elapsed() {
    return (performance.now() - this.start) / 1000;
  }

  /** The backend took it: handle aborts its call and gives its substitute at the deadline. */
  dispatched(handle) {
    this.handle = handle;
  }

  /** Marks it settled; true only for the first call (the one allowed to reply). */
  settle() {
    if (this.done) return false;
    this.done = true;
    return true;
  }

  /** Settled by its deadline (after settle()). */
  markExpired() {
    this.expired = true;
  }

  /** The backend's outcome (the handle's handler). */
  onOutcome(outcome) {
    this.outcomeTo(this, outcome);
  }
}

class InFlight {
  /**
   * onDeadline(p, lateMs): called when a query's budget runs out, with p still unsettled, and how
   * long after its deadline that is (a busy event loop fires timers late); onOutcome(p, outcome):
   * the backend's outcome for p; onLost(p, outcome): p is dropped unanswered by abortAll (the
   * connection is gone), under that outcome label; now: the clock deadlines are read on (performance.now(); a test's own clock).
   */
  constructor({
    onDeadline, onOutcome, onLost = () => {}, now = () => performance.now(),
  }) {
    this.onDeadline = onDeadline;
    this.onOutcome = onOutcome;
    this.onLost = onLost;
    this.now = now;
    this.head = null; // the oldest query in flight; the list runs in arrival order (PendingQuery.next)
    this.tail = null;
    this.count = 0;
    this.timer = null;
    this.timerAt = Infinity; // when the timer fires (performance.now() time)
    this.ordered = true; // every deadline in the list comes no earlier than those before it
    this.lastDeadlineAt = -Infinity;
  }

  get size() {
    return this.count;
  }

  /**
   * A query that arrived at `receivedAt` (performance.now() time, now when left out; a query
   * handled after others of the same chunk, or after waiting for a slot, arrived earlier), with
   * deadlineMs from then to be answered in.
   */
  add(query, deadlineMs, receivedAt) {
    const now = this.now();
    const p = new PendingQuery(this.onOutcome, query, receivedAt === undefined || receivedAt > now ? now : receivedAt, deadlineMs);
    if (p.deadlineAt < this.lastDeadlineAt) this.ordered = false;
    this.lastDeadlineAt = p.deadlineAt;
    p.prev = this.tail;
    if (this.tail === null) this.head = p; else this.tail.next = p;
    this.tail = p;
    this.count++;
    if (p.deadlineAt < this.timerAt) this.arm(p.deadlineAt, now);
    return p;
  }

  /** Takes p out of the books; true only for the call that did it (the one allowed to reply). */
  settle(p) {
    if (!p.settle()) return false;
    if (p.prev === null) this.head = p.next; else p.prev.next = p.next;
    if (p.next === null) this.tail = p.prev; else p.next.prev = p.prev;
    p.prev = null;
    p.next = null;
    this.count--;
    if (this.count === 0) {
      this.ordered = true; // the timer, if armed, finds nothing and stops
      this.lastDeadlineAt = -Infinity;
    }
    return true;
  }

  /** The connection is gone: settle every query without a reply and abort its backend call. */
  abortAll(outcome) {
    const all = [];
    for (let p = this.head; p !== null; p = p.next) all.push(p);
    for (const p of all) {
      this.settle(p);
      if (p.handle !== null) p.handle.abort();
      this.onLost(p, outcome);
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
  }

  arm(at, now) {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(deadlinesDue, Math.max(1, Math.ceil(at - now)), this);
  }

  /**
   * The timer's work without waiting for it: a busy event loop (a poll phase of many backend
   * answers) runs timers late, and a deadline answer that leaves late is worse than none.
   * Called as backend answers come in; cheap when nothing is due.
   */
  expireIfDue(now = this.now()) {
    if (now < this.timerAt) return;
    clearTimeout(this.timer);
    this.expireDue();
  }

  /** The timer fired: expire every query that is due, and wait for the next one. */
  expireDue() {
    this.timer = null;
    this.timerAt = Infinity;
    const now = this.now();
    let next = Infinity;
    for (let p = this.head; p !== null;) {
      const after = p.next;
      if (p.deadlineAt <= now) {
        this.onDeadline(p, now - p.deadlineAt);
        // An expiry that settled more than its own query (its reply closed the connection) left
        // `after` out of the list: go on from p's new neighbour, or from the oldest query left.
        if (after === null || !after.done) p = after;
        else p = p.done ? this.head : p.next;
      } else {
        next = Math.min(next, p.deadlineAt);
        if (this.ordered) break;
        p = after;
      }
    }
    if (next !== Infinity && this.count > 0 && this.timer === null) this.arm(next, now);
  }
}

function deadlinesDue(inflight) {
  inflight.expireDue();
}

module.exports = { InFlight };
