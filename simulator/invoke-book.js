'use strict';

// What one router connection has sent and is waiting for, by InvokeID: queries (pending, then
// overdue once past RequestTimeout), invalid frames sent on purpose and the answer each should
// get, and the accounting of injected errors (injected, caught, voided) in one place. A reply is
// matched here exactly once; a second reply, or a reply to an id never sent, is a violation.

const { performance } = require('node:perf_hooks');

const REMEMBERED = 100_000; // answered ids kept, to tell a second reply from an unknown one

class InvokeBook {
  constructor(stats) {
    this.stats = stats;
    this.pending = new Map(); // invokeId -> {logical, sentAt, afterFatal}
    this.overdue = new Map(); // past requestTimeoutMs, still waiting
    this.expectedRejects = new Map(); // invokeId -> {kind, afterFatal} of an invalid frame sent with it
    this.answeredIds = new Set();
    this.answeredOrder = [];
    this.expectingFatal = null; // {kind, at} once a fatal frame was sent on this connection
  }

  /** A query copy sent with this id. One sent behind an induced fatal frame is never read by the host. */
  addQuery(invokeId, logical) {
    this.pending.set(invokeId, {
      logical, sentAt: performance.now(), afterFatal: this.expectingFatal !== null, overdue: false,
    });
    logical.outstanding++;
  }

  /** An invalid frame of `kind` sent with this id; `expect` is 'reject' or 'fatal'. */
  addInvalid(invokeId, kind, expect) {
    this.stats.injected[expect]++;
    // A reject sent behind a fatal frame can never be answered: the host stops reading at the fatal one.
    if (expect === 'reject') this.expectedRejects.set(invokeId, { kind, afterFatal: this.expectingFatal !== null });
    else if (this.expectingFatal === null) this.expectingFatal = { kind, at: performance.now() };
    else this.stats.voided.fatal++; // a second fatal frame behind the first
  }

  /** A FAILURE_CONF for an invalid frame we sent: counted as caught (or a violation); false if it was not one. */
  answerInvalid(invokeId, status, statusName, wantStatus) {
    const expected = this.expectedRejects.get(invokeId);
    if (expected === undefined) return false;
    this.expectedRejects.delete(invokeId);
    if (status === wantStatus) this.stats.caught.reject++;
    else this.stats.violation(`invalid ${expected.kind} frame answered with ${statusName}`);
    return true;
  }

  /** The entry a reply to this id settles, taken out of the book; undefined (and a violation) when there is none. */
  takeReply(id) {
    let entry = this.pending.get(id);
    if (entry !== undefined) this.pending.delete(id);
    else {
      entry = this.overdue.get(id);
      if (entry !== undefined) this.overdue.delete(id);
    }
    if (entry === undefined) {
      if (this.expectedRejects.delete(id)) this.stats.violation('invalid frame answered as a query');
      else this.stats.violation(this.answeredIds.has(id) ? 'second reply to one InvokeID' : 'reply to an unknown InvokeID');
      return undefined;
    }
    this.answeredIds.add(id);
    this.answeredOrder.push(id);
    if (this.answeredOrder.length > REMEMBERED) this.answeredIds.delete(this.answeredOrder.shift());
    return entry;
  }

  /** Moves queries past timeoutMs to overdue, calling onOverdue() for each (a missed heartbeat); stops when it returns false. */
  sweepOverdue(now, timeoutMs, onOverdue) {
    for (const [id, entry] of this.pending) {
      if (now - entry.sentAt <= timeoutMs) break; // insertion order = send order
      this.pending.delete(id);
      entry.overdue = true;
      this.overdue.set(id, entry);
      if (!onOverdue()) return;
    }
  }

  /** The host closed the connection: was it the fatal frame we sent? Counts it as caught. */
  closedByFatal() {
    if (this.expectingFatal === null) return null;
    this.stats.caught.fatal++;
    return this.expectingFatal.kind;
  }

  /**
   * The connection is gone: every query still waiting is settled as lost (unexpected) or voided
   * (sent behind a fatal frame), each logical query once; onLost(logical) for each. Returns how
   * many copies were still within their RequestTimeout (the overdue ones have timed out already).
   */
  loseAll(onLost) {
    const inTime = this.pending.size;
    for (const map of [this.pending, this.overdue]) {
      for (const entry of map.values()) {
        entry.logical.outstanding--;
        if (!entry.logical.settled && entry.logical.outstanding === 0) {
          entry.logical.settled = true;
          if (entry.afterFatal) this.stats.voided.queries++;
          else this.stats.lost++;
          onLost(entry.logical);
        }
      }
      map.clear();
    }
    for (const { afterFatal } of this.expectedRejects.values()) {
      if (afterFatal) this.stats.voided.reject++; // behind an induced fatal frame: unanswerable
      else this.stats.violation('invalid frame never answered');
    }
    this.expectedRejects.clear();
    this.expectingFatal = null;
    return inTime;
  }
}

module.exports = { InvokeBook };
