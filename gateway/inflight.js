'use strict';

// The queries of one session that wait for the backend, and the exactly-once rule: a query is
// settled once, by whichever comes first of its answer, its deadline, or the end of the
// connection; everything that comes after finds it settled and does nothing.

const { performance } = require('node:perf_hooks');
const { QuerySignal } = require('./abort');

/** One query in flight: its deadline timer and the signal that aborts its backend call. */
class PendingQuery {
  constructor(query) {
    this.query = query;
    this.start = performance.now();
    this.done = false;
    this.deadlineMs = 0;
    this.signal = new QuerySignal();
    this.timer = null;
  }

  /** Seconds since the query was read. */
  elapsed() {
    return (performance.now() - this.start) / 1000;
  }
}

class InFlight {
  /**
   * onDeadline(p): called when a query's budget runs out, with p still unsettled; metrics: where
   * abortAll counts the queries it drops (queries_in_flight is read from `size` at scrape time).
   */
  constructor({ onDeadline, metrics }) {
    this.onDeadline = onDeadline;
    this.metrics = metrics;
    this.queries = new Set();
  }

  get size() {
    return this.queries.size;
  }

  /** A query read now, with deadlineMs to be answered in. */
  add(query, deadlineMs) {
    const p = new PendingQuery(query);
    p.deadlineMs = deadlineMs;
    this.queries.add(p);
    p.timer = setTimeout(deadlineFired, deadlineMs, this, p);
    return p;
  }

  /** Takes p out of the books; true only for the call that did it (the one allowed to reply). */
  settle(p) {
    if (p.done) return false;
    p.done = true;
    if (p.timer !== null) clearTimeout(p.timer);
    p.timer = null;
    this.queries.delete(p);
    return true;
  }

  /** The connection is gone: settle every query without a reply and abort its backend call. */
  abortAll(outcome) {
    for (const p of [...this.queries]) {
      this.settle(p);
      p.signal.abort();
      this.metrics.observeQuery(p.query.subtype, outcome, p.elapsed());
    }
  }
}

function deadlineFired(inflight, p) {
  p.timer = null;
  if (!p.done) inflight.onDeadline(p);
}

module.exports = { InFlight, PendingQuery };
