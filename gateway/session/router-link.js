'use strict';

// The socket side of one router connection: bytes in through the MessageReader (with the
// partial-frame and idle timers), replies out (batched and bounded: outbox.js), flow control,
// and the mechanics of a close: discarding input, our FIN and the linger after it. When to close is the Session's business, and so is every state of
// the close (session.js, one state machine); the link keeps no close state of its own, only what
// its socket says. It tells the session through six callbacks:
//   onMessage(msg, size), onProtocolError(err)   one per frame, from the reader
//   onPeerEnd()        the router sent FIN, and every byte it sent before has been handed on
//                      (none is held unread)
//   onInputDrained()   what the router had sent when the session asked (awaitInputDrained) is read
//   onFailure(reason)  why the connection is about to go: a socket error, or a limit of the
//                      link's own (idle timeout, partial frame, outbound buffer, linger)
//   onClosed()         the socket is gone; called once
//
// A chunk holding many frames (a router that writes a thousand queries at once) is handled in
// slices of SLICE_FRAMES: after each slice the link stops reading until the next round of the
// event loop, so that deadline timers, backend answers and reply writes run in between rather
// than after the whole chunk.

const { performance } = require('node:perf_hooks');
const { MessageReader, DIRECTION, MESSAGE_TYPES: T } = require('../../lib/protocol');
const { FrameTrace } = require('./frame-trace');
const { Outbox } = require('./outbox');

// Module-level socket handlers, no closures per connection on the hot path; a socket's link under a symbol (as ws's kWebSocket).
const kLink = Symbol('ged145.routerLink');
function socketOnData(chunk) {
  this[kLink].onData(chunk);
}
function socketOnDataAfterClose(chunk) {
  this[kLink].reader.push(chunk);
}
function socketOnEnd() {
  this[kLink].onEnd();
}
function socketOnClose() {
  this[kLink].onClose();
}
function socketOnError(err) {
  this[kLink].onSocketError(err);
}

/** Frames handled before the link lets the event loop turn (see the top of this file). */
const SLICE_FRAMES = 64;
// Why input is paused (RouterLink.pauses, a bit each): reading resumes when none is left.
const PAUSE_SLICE = 1; // a slice is done; resumes on the next round of the event loop
const PAUSE_HELD = 2; // the session holds as many requests as it may (limits.maxQueuedBytes)

class RouterLink {
  /**
   * meta: fields for every log line ({session, peer}).
   * trace: {limit, redact}: log the first `limit` frames each way (--trace-frames), or null; redact() is asked per frame.
   * profile: the wire numbering the reader decodes (the gateway's protocol section).
   */
  constructor(socket, {
    limits, log, meta, onMessage, onProtocolError, onPeerEnd, onInputDrained = () => {}, onFailure, onClosed, holding = () => false, trace = null, profile,
  }) {
    this.socket = socket;
    this.limits = limits;
    this.log = log;
    this.meta = meta;
    this.onMessageCallback = onMessage;
    this.onPeerEndCallback = onPeerEnd;
    this.onInputDrained = onInputDrained;
    this.onFailure = onFailure;
    this.onClosedCallback = onClosed;
    this.holding = holding; // the session holds requests it has read and not answered yet

    this.pauses = 0; // PAUSE_* bits: input is read only while none is set
    this.sliceFrames = 0; // frames handled since the event loop last turned
    this.reading = false; // inside onData: replies made now share the tick's burst
    this.peerEndHeld = false; // the router's FIN came while input was paused: told once the held bytes are read
    this.pumping = true; // bytes go to the reader; false once the session discards input
    this.queriesAfterClose = 0; // QUERY_REQs that came once input was discarded: no answer can follow
    this.drainChecks = 0; // awaitInputDrained: check phases of the event loop still to pass

    this.lastRx = performance.now();
    this.partialSince = -1; // when the frame now buffered began to arrive; -1 = none
    this.idleTimeoutMs = 0;
    this.idleTimer = null;
    this.partialTimer = null;
    this.lingerTimer = null;

    this.trace = trace && trace.limit > 0 ? new FrameTrace({
      limit: trace.limit, log, meta, redact: trace.redact, profile,
    }) : null;
    this.reader = new MessageReader({
      direction: DIRECTION.ROUTER_TO_HOST,
      profile,
      maxMessageLength: limits.maxMessageLength,
      onMessage: (msg, size) => this.onMessage(msg, size),
      onError: (err) => {
        onProtocolError(err);
        this.counted();
      },
      onFrame: this.trace === null ? undefined : (typeId, body) => this.trace.received(typeId, body),
    });
    this.outbox = new Outbox(socket, { maxBytes: limits.maxOutboundBytes, onOverflow: (n) => this.overflow(n), trace: this.trace });

    socket[kLink] = this;
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
    // The trace decodes each frame a second time: without the session's hooks, or every field would count twice.
    if (this.trace !== null) this.trace.cipher = cipher === undefined ? undefined : { ...cipher, onDropped: undefined, onDecrypted: undefined };
  }

  // ---- input -------------------------------------------------------------------------------

  onData(chunk) {
    this.lastRx = performance.now();
    this.sliceFrames = 0;
    const framesBefore = this.reader.frames;
    if (!this.feed(chunk)) return;
    if (this.reader.bufferedBytes > 0) {
      // The frame now buffered started in this chunk if any frame completed in it.
      if (this.partialSince < 0 || this.reader.frames !== framesBefore) this.partialSince = this.lastRx;
      this.armPartial();
    } else {
      this.partialSince = -1;
    }
  }

  /** Hands a chunk (or, with none, the bytes held while paused) to the reader; false if that cost the connection. */
  feed(chunk) {
    this.reading = true;
    try {
      if (chunk === undefined) this.reader.resume();
      else this.reader.push(chunk);
    } catch (err) {
      // A bug in a handler must cost one connection, never the process.
      this.log.error('internal error while handling router data; closing the connection', { ...this.meta, error: err.message });
      this.fail('internal error');
      return false;
    } finally {
      this.reading = false;
    }
    return true;
  }

  onMessage(msg, size) {
    this.onMessageCallback(msg, size);
    this.counted();
  }

  /** One more frame handled: at the end of a slice, let the event loop turn. */
  counted() {
    if (++this.sliceFrames < SLICE_FRAMES || (this.pauses & PAUSE_SLICE) !== 0 || !this.pumping) return;
    this.pause(PAUSE_SLICE);
    setImmediate(endOfSlice, this);
  }

  /**
   * The session will end once the router's input is read: onInputDrained() comes when no frame
   * waits for a next slice and a poll phase of the event loop has passed since the last ask. A
   * query may already sit in our socket's buffer, handed in the same round of I/O as what made the
   * session ask, or arrived while that round ran: libuv reads it in the poll phase, and the
   * session hears of it first. Node tells no one that a socket's receive buffer is empty; that
   * poll phase is how we know.
   */
  awaitInputDrained() {
    const waiting = this.drainChecks > 0;
    this.drainChecks = 2; // this round's check phase, then the next: a poll phase between them
    if (!waiting) setImmediate(checkInputDrained, this);
  }

  checkInputDrained() {
    if (!this.pumping || this.socket.destroyed) {
      this.drainChecks = 0;
      return;
    }
    // Frames read and held for the next slice are input too: not drained until they are handed on.
    if ((this.pauses & PAUSE_SLICE) !== 0 || --this.drainChecks > 0) {
      setImmediate(checkInputDrained, this);
      return;
    }
    this.onInputDrained();
  }

  /** True while input is not being read (a slice is over, or the session holds all it may). */
  get paused() {
    return this.pauses !== 0;
  }

  /** Stop after the current message: the frames behind it wait in the reader, then in TCP. */
  pause(why) {
    if (!this.pumping) return; // input is discarded: nothing to hold back
    const was = this.pauses;
    this.pauses |= why;
    if (was !== 0) return;
    this.reader.pause();
    this.socket.pause();
  }

  resume(why) {
    if ((this.pauses & why) === 0) return;
    this.pauses &= ~why;
    if (this.pauses !== 0 || this.socket.destroyed) return;
    this.sliceFrames = 0;
    if (!this.feed()) return; // frames held since the pause are handled now, and may pause again
    if (this.pauses !== 0 || this.socket.destroyed) return;
    this.socket.resume();
    if (this.reader.bufferedBytes > 0 && this.partialSince < 0) {
      this.partialSince = performance.now();
      this.armPartial();
    }
    if (this.peerEndHeld) { // the FIN came while bytes were held
      this.peerEndHeld = false;
      this.onPeerEndCallback();
    }
  }

  /** The session holds as many requests as it may: stop reading until it says otherwise. */
  pauseInput() {
    this.pause(PAUSE_HELD);
  }

  resumeInput() {
    this.resume(PAUSE_HELD);
  }

  /** Bytes received and not handed on yet (held while paused). */
  get unreadBytes() {
    return this.reader.heldBytes;
  }

  // ---- output ------------------------------------------------------------------------------

  /** A reply, batched with others (outbox.js); `more`: other queries are in flight; `soon`: an answer at its deadline. */
  send(buf, more = false, soon = false) {
    this.outbox.send(buf, more, soon, this.reading);
  }

  /** What is corked leaves now (answers at their deadline, hundreds of them, in groups). */
  flush() {
    this.outbox.flush();
  }

  /** The router does not read its replies (limits.maxOutboundBytes). */
  overflow(bufferedBytes) {
    this.log.warn('router is not reading its replies; closing the connection', { ...this.meta, bufferedBytes, limit: this.limits.maxOutboundBytes });
    this.fail('outbound buffer limit');
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
    if (this.socket.destroyed) return;
    // While we hold requests unanswered or do not read, the quiet is ours, not the router's.
    if (this.pauses !== 0 || this.holding()) this.lastRx = performance.now();
    const quiet = performance.now() - this.lastRx;
    if (quiet >= this.idleTimeoutMs) {
      this.log.warn(`nothing received for ${this.idleTimeoutMs} ms (IdleTimeout); closing the connection`, this.meta);
      this.fail('idle timeout');
    } else {
      this.armIdle(this.idleTimeoutMs - quiet + 1);
    }
  }

  armPartial() {
    if (this.partialTimer === null && this.pumping && !this.socket.destroyed) {
      this.partialTimer = setTimeout(onPartialTimeout, this.limits.partialFrameTimeoutMs, this);
    }
  }

  checkPartial() {
    this.partialTimer = null;
    if (this.socket.destroyed || this.reader.bufferedBytes === 0) return;
    const waited = performance.now() - this.partialSince;
    const limit = this.limits.partialFrameTimeoutMs;
    if (waited >= limit) {
      this.log.warn(`a frame stayed incomplete for ${limit} ms; closing the connection`, { ...this.meta, bufferedBytes: this.reader.bufferedBytes });
      this.fail('partial frame timeout');
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

  /**
   * The session decided to close: no more input is acted on, but it is still read (and dropped),
   * so that the close is not a reset. The queries in it are counted (queriesAfterClose): the
   * router sent them before it saw our FIN, and will time them out.
   */
  discardInput() {
    this.pumping = false;
    this.clearTimers();
    this.pauses = 0;
    this.socket.removeListener('data', socketOnData);
    this.socket.on('data', socketOnDataAfterClose);
    this.reader.skim((type) => {
      if (type === T.QUERY_REQ) this.queriesAfterClose++;
    });
    this.socket.resume();
    if (this.peerEndHeld) { // its FIN came while input was paused: the session learns of it now
      this.peerEndHeld = false;
      this.onPeerEndCallback();
    }
  }

  /**
   * Our FIN goes out after every reply (and `last`); we keep reading and discarding until the
   * router closes too (peerEnded: it already has) or limits.closeLingerMs passes. Closing with
   * unread bytes would make the kernel send RST, and the router would throw away replies it had
   * not read yet.
   */
  finish(last, peerEnded) {
    const socket = this.socket;
    if (socket.writableEnded || socket.destroyed) return;
    this.outbox.flush();
    socket.end(last);
    if (peerEnded) this.closeWhenFlushed();
    this.lingerTimer = setTimeout(onLingerTimeout, this.limits.closeLingerMs, this);
  }

  /** The router has sent its FIN too: the socket goes once our replies and FIN are written. */
  closeWhenFlushed() {
    const socket = this.socket;
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  }

  /** The router sent FIN: told to the session once every byte before it is handed on. */
  onEnd() {
    if (this.socket.destroyed) return;
    if (this.pauses === 0 || !this.pumping) this.onPeerEndCallback();
    else this.peerEndHeld = true; // told in resume(), once the held bytes are read
  }

  /** The connection goes now, for a reason of the link's own (a limit, an internal error). */
  fail(reason) {
    if (this.socket.destroyed) return;
    this.onFailure(reason);
    this.socket.destroy();
  }

  destroy() {
    this.socket.destroy();
  }

  onSocketError(err) {
    // ECONNRESET and friends: the router went away. 'close' follows and does the cleanup.
    this.onFailure(err.code || err.message);
  }

  onClose() {
    this.clearTimers();
    if (this.lingerTimer !== null) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    this.onClosedCallback();
  }
}

function checkInputDrained(link) {
  link.checkInputDrained();
}
function endOfSlice(link) {
  link.resume(PAUSE_SLICE);
}
function onIdleTimeout(link) {
  link.checkIdle();
}
function onPartialTimeout(link) {
  link.checkPartial();
}
function onLingerTimeout(link) {
  link.lingerTimer = null;
  link.fail('linger timeout');
}

module.exports = { RouterLink, SLICE_FRAMES };
