'use strict';

// The requests a session has read and cannot act on yet: queries past limits.maxInFlight, and
// anything read behind a request that waits (requests are acted on in the order they were read).
// A queue with a moving head (no shift() per request), its bytes counted against
// limits.maxQueuedBytes, and the barrier rule: an OPEN_REQ or CLOSE_REQ that waits here changes
// how the frames after it are read (state, cipher), so reading stops until it is taken.
// Heartbeats never wait here (session.js answers them at once). Requests are released in order
// while the session has room, a slice of SLICE_FRAMES per turn of the event loop, as the link
// reads: a backlog of thousands never starves the deadline timers and the writes.

const { performance } = require('node:perf_hooks');
const { MESSAGE_TYPES: T } = require('../../lib/protocol');
const { SLICE_FRAMES } = require('./router-link');

/** Messages that change how the frames after them are read (state, cipher): decoding waits for them. */
const BARRIERS = new Set([T.OPEN_REQ, T.CLOSE_REQ]);
/** A session that stopped reading (held requests past limits.maxQueuedBytes) reads again at this fraction of it. */
const RESUME_FRACTION = 0.5;

class Backlog {
  /**
   * maxBytes: limits.maxQueuedBytes, the bytes held before the session stops reading. The
   * session's callbacks, for release(): mayTake(msg), whether it has room for msg now;
   * take(msg, receivedAt, now), msg is acted on; gone(), the connection is gone; afterSlice(),
   * a release has stopped (nothing left, no room, or the slice is over).
   */
  constructor(maxBytes, {
    mayTake = () => true, take = () => {}, gone = () => false, afterSlice = () => {},
  } = {}) {
    this.maxBytes = maxBytes;
    this.mayTake = mayTake;
    this.onTake = take;
    this.gone = gone;
    this.afterSlice = afterSlice;
    this.releasing = false; // release() is running: a settle inside it does not start it again
    this.scheduled = false; // the next slice waits for the next turn of the event loop
    this.items = []; // {msg, size, receivedAt}, from head on
    this.head = 0;
    this.bytes = 0;
    this.barrierHeld = false; // an OPEN_REQ or CLOSE_REQ waits here: decoding waits too
  }

  /** Requests waiting. */
  get length() {
    return this.items.length - this.head;
  }

  /** Keeps a request read at receivedAt (performance.now()); true when reading should stop for now. */
  hold(msg, size, receivedAt) {
    this.items.push({ msg, size, receivedAt });
    this.bytes += size;
    if (BARRIERS.has(msg.typeId)) this.barrierHeld = true;
    return this.barrierHeld || this.bytes > this.maxBytes;
  }

  /** The oldest request waiting (undefined when none). */
  peek() {
    return this.items[this.head];
  }

  /** Takes the oldest request out. */
  take() {
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    this.bytes -= item.size;
    if (BARRIERS.has(item.msg.typeId)) this.barrierHeld = false;
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    }
    return item;
  }

  /** Whether reading may start again: no barrier waits, and what is held is down to RESUME_FRACTION of maxBytes. */
  get mayResume() {
    return !this.barrierHeld && this.bytes <= this.maxBytes * RESUME_FRACTION;
  }

  /** Hands requests to the session while it has room, a slice per turn of the event loop. */
  release() {
    // A query settled inside the loop (one that waited past its deadline is answered at once)
    // releases again, which would start this loop one level deeper: the loop goes on instead.
    if (this.releasing) return;
    this.releasing = true;
    try {
      this.releaseSlice();
    } finally {
      this.releasing = false;
    }
  }

  releaseSlice() {
    this.scheduled = false;
    const now = performance.now(); // for each query taken: has it waited past its deadline?
    let n = 0;
    while (this.length > 0 && !this.gone()) {
      if (!this.mayTake(this.peek().msg)) break;
      if (++n > SLICE_FRAMES) {
        this.scheduled = true;
        setImmediate(releaseLater, this);
        return;
      }
      const item = this.take();
      this.onTake(item.msg, item.receivedAt, now);
    }
    if (!this.gone()) this.afterSlice();
  }

  /** Empties the backlog (the connection is gone); returns what was waiting, oldest first. */
  drop() {
    const left = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    this.bytes = 0;
    this.barrierHeld = false;
    return left;
  }
}

function releaseLater(backlog) {
  backlog.release();
}

module.exports = { Backlog };
