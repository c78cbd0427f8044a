'use strict';

// The socket side of one router connection: bytes in through the MessageReader (with the
// partial-frame and idle timers), replies out (corked per tick while router input is handled,
// per round of I/O while more replies are due, a lone reply written at once; bounded by
// limits.maxOutboundBytes), flow control, and the close: a lingering close after our FIN, and
// the router's own FIN (a half-close). What the messages mean is the Session's business
// (session.js); the link tells it through four callbacks:
//   onMessage(msg), onProtocolError(err)   one per frame, from the reader
//   onPeerEnd()                           the router sent FIN while we had not decided to close
//   onClosed()                            the socket is gone; called once

const { performance } = require('node:perf_hooks');
const { MessageReader, DIRECTION } = require('../lib/protocol');
const { FrameTrace } = require('./frame-trace');

// Module-level socket handlers: no closures per connection on the hot path.
function socketOnData(chunk) {
  this.link.onData(chunk);
}
function socketOnEnd() {
  this.link.onEnd();
}
function socketOnClose() {
  this.link.onClose();
}
function socketOnError(err) {
  this.link.onSocketError(err);
}
// RouterLink.corked: not corked, or uncorked on the next tick, or at the end of this round of I/O.
const NOT_CORKED = 0;
const UNTIL_TICK = 1;
const UNTIL_ROUND = 2;

function uncork(link) {
  if (link.corked === NOT_CORKED) return;
  link.corked = NOT_CORKED;
  if (!link.socket.destroyed) link.socket.uncork();
}

class RouterLink {
  /** meta: fields for every log line ({session, peer}). */
  /** trace: {limit, redact}: log the first `limit` frames each way (--trace-frames), or null. */
  constructor(socket, {
    limits, log, meta, onMessage, onProtocolError, onPeerEnd, onClosed, trace = null,
  }) {
    this.socket = socket;
    this.limits = limits;
    this.log = log;
    this.meta = meta;
    this.onPeerEndCallback = onPeerEnd;
    this.onClosedCallback = onClosed;

    this.paused = false; // reading stopped at the in-flight cap
    this.corked = NOT_CORKED;
    this.reading = false; // inside onData: replies made now share the tick's burst
    // Closing: `inputStopped` once the session decided to close (input is read and discarded from
    // then on), `finishing` once our FIN is queued, `peerEnded` once the router's FIN arrived,
    // `closed` once the socket is gone.
    this.inputStopped = false;
    this.finishing = false;
    this.peerEnded = false;
    this.closed = false;
    this.closeReason = null;

    this.lastRx = performance.now();
    this.partialSince = -1; // when the frame now buffered began to arrive; -1 = none
    this.idleTimeoutMs = 0;
    this.idleTimer = null;
    this.partialTimer = null;
    this.lingerTimer = null;

    this.trace = trace && trace.limit > 0 ? new FrameTrace({
      limit: trace.limit, log, meta, redact: trace.redact,
    }) : null;
    this.reader = new MessageReader({
      direction: DIRECTION.ROUTER_TO_HOST,
      maxMessageLength: limits.maxMessageLength,
      onMessage,
      onError: onProtocolError,
      onFrame: this.trace === null ? undefined : (typeId, body) => this.trace.received(typeId, body),
    });

    socket.link = this;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    socket.on('data', socketOnData);
    socket.on('end', socketOnEnd);
    socket.on('close', socketOnClose);
    socket.on('error', socketOnError);
  }

  /** From the next frame on, tags are decrypted with this cipher (undefined: plain). */
  setCipher(cipher) {
    this.reader.setCipher(cipher);
    if (this.trace !== null) this.trace.cipher = cipher;
  }

  // ---- input -------------------------------------------------------------------------------

  onData(chunk) {
    if (this.inputStopped) return; // closing: read and discard, so the close is not a reset
    this.lastRx = performance.now();
    const framesBefore = this.reader.frames;
    this.reading = true;
    try {
      this.reader.push(chunk);
    } catch (err) {
      // A bug in a handler must cost one connection, never the process.
      this.log.error('internal error while handling router data; closing the connection', { ...this.meta, error: err.message });
      this.destroy('internal error');
      return;
    } finally {
      this.reading = false;
    }
    if (this.reader.bufferedBytes > 0) {
      // The frame now buffered started in this chunk if any frame completed in it.
      if (this.partialSince < 0 || this.reader.frames !== framesBefore) this.partialSince = this.lastRx;
      this.armPartial();
    } else {
      this.partialSince = -1;
    }
  }

  /** Stop after the current message: the frames behind it wait in the reader, then in TCP. */
  pauseInput() {
    this.paused = true;
    this.reader.pause();
    this.socket.pause();
  }

  resumeInput() {
    this.paused = false;
    this.reader.resume(); // frames held since the pause are handled now, and may pause again
    if (this.paused || this.closed || this.inputStopped) return;
    this.socket.resume();
    if (this.reader.bufferedBytes > 0 && this.partialSince < 0) {
      this.partialSince = performance.now();
      this.armPartial();
    }
  }

  // ---- output ------------------------------------------------------------------------------

  /**
   * Replies made while a chunk of router input is handled go out in one corked burst at the end
   * of the tick. `more`: other queries of this connection are still in flight, so the burst is
   * held until the end of this round of I/O (setImmediate) and answers that arrive on other
   * backend sockets in the same round join it: one write for many replies under load. The last
   * reply due, with nothing corked, is written at once: a lone query's answer waits for nothing.
   */
  send(buf, more = false) {
    const socket = this.socket;
    if (this.closed || this.finishing || socket.destroyed) return;
    if (this.corked === NOT_CORKED) {
      // Otherwise nothing to batch with: written now, not after the rest of the tick's work.
      if (more || this.reading) this.cork(more);
    } else if (this.corked === UNTIL_ROUND && !more) {
      this.corked = UNTIL_TICK; // the last reply due: the burst leaves now, not at the round's end
      process.nextTick(uncork, this);
    }
    socket.write(buf);
    if (this.trace !== null && !this.trace.done) this.trace.sent(buf);
    if (socket.writableLength > this.limits.maxOutboundBytes) {
      this.log.warn('router is not reading its replies; closing the connection', {
        ...this.meta, bufferedBytes: socket.writableLength, limit: this.limits.maxOutboundBytes,
      });
      this.destroy('outbound buffer limit');
    }
  }

  cork(untilRound) {
    this.socket.cork();
    this.corked = untilRound ? UNTIL_ROUND : UNTIL_TICK;
    if (untilRound) setImmediate(uncork, this);
    else process.nextTick(uncork, this);
  }

  // ---- timers ------------------------------------------------------------------------------

  /** The router's IdleTimeout: nothing received for this long closes the connection. */
  setIdleTimeout(ms) {
    this.idleTimeoutMs = ms;
    this.armIdle(ms);
  }

  armIdle(ms) {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(onIdleTimeout, ms, this);
  }

  checkIdle() {
    this.idleTimer = null;
    if (this.closed || this.inputStopped) return;
    const quiet = performance.now() - this.lastRx;
    if (quiet >= this.idleTimeoutMs) {
      this.log.warn(`nothing received for ${this.idleTimeoutMs} ms (IdleTimeout); closing the connection`, this.meta);
      this.destroy('idle timeout');
    } else {
      this.armIdle(this.idleTimeoutMs - quiet + 1);
    }
  }

  armPartial() {
    if (this.partialTimer === null && !this.closed && !this.inputStopped) {
      this.partialTimer = setTimeout(onPartialTimeout, this.limits.partialFrameTimeoutMs, this);
    }
  }

  checkPartial() {
    this.partialTimer = null;
    if (this.closed || this.inputStopped || this.reader.bufferedBytes === 0) return;
    const waited = performance.now() - this.partialSince;
    const limit = this.limits.partialFrameTimeoutMs;
    if (waited >= limit) {
      this.log.warn(`a frame stayed incomplete for ${limit} ms; closing the connection`, { ...this.meta, bufferedBytes: this.reader.bufferedBytes });
      this.destroy('partial frame timeout');
    } else {
      this.partialTimer = setTimeout(onPartialTimeout, limit - waited + 1, this);
    }
  }

  clearTimers() {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    if (this.partialTimer !== null) clearTimeout(this.partialTimer);
    this.idleTimer = null;
    this.partialTimer = null;
  }

  // ---- closing -----------------------------------------------------------------------------

  /** The session decided to close: act on no more input, but keep reading (to discard). */
  stopInput(reason) {
    if (this.closeReason === null) this.closeReason = reason;
    this.inputStopped = true;
    this.clearTimers();
    this.paused = false;
    this.socket.resume();
  }

  /**
   * Our FIN goes out after every reply (and `last`); we keep reading and discarding until the
   * router closes too or limits.closeLingerMs passes. Closing with unread bytes would make the
   * kernel send RST, and the router would throw away replies it had not read yet.
   */
  finish(last) {
    if (this.finishing || this.closed) return;
    this.finishing = true;
    const socket = this.socket;
    uncork(this);
    socket.end(last);
    if (this.peerEnded) this.closeWhenFlushed();
    this.lingerTimer = setTimeout(onLingerTimeout, this.limits.closeLingerMs, this);
  }

  closeWhenFlushed() {
    const socket = this.socket;
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  }

  /** The router sent FIN: either the answer to our FIN, or a half-close after its last request. */
  onEnd() {
    this.peerEnded = true;
    if (this.finishing) this.closeWhenFlushed();
    else if (!this.closed) this.onPeerEndCallback();
  }

  destroy(reason) {
    if (this.closed) return;
    if (this.closeReason === null) this.closeReason = reason;
    this.socket.destroy();
  }

  onSocketError(err) {
    // ECONNRESET and friends: the router went away. 'close' follows and does the cleanup.
    if (this.closeReason === null) this.closeReason = err.code || err.message;
  }

  onClose() {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    if (this.lingerTimer !== null) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    this.onClosedCallback();
  }
}

function onIdleTimeout(link) {
  link.checkIdle();
}
function onPartialTimeout(link) {
  link.checkPartial();
}
function onLingerTimeout(link) {
  link.lingerTimer = null;
  link.destroy('linger timeout');
}

module.exports = { RouterLink };
