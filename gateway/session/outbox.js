'use strict';

// Replies out to one router, batched: those made while a chunk of router input is handled go out
// in one corked burst at the end of the tick; those made while other queries of the connection
// are still in flight wait for the end of this round of I/O, so that answers arriving on other
// backend sockets in the same round join them (one write for many replies under load); a lone
// reply, with nothing corked, is written at once. The socket's own buffer is bounded by
// limits.maxOutboundBytes: past it, onOverflow (the link closes the connection).

// Outbox.corked: not corked, or uncorked on the next tick, or at the end of this round of I/O.
const NOT_CORKED = 0;
const UNTIL_TICK = 1;
const UNTIL_ROUND = 2;

function uncork(outbox) {
  if (outbox.corked === NOT_CORKED) return;
  outbox.corked = NOT_CORKED;
  if (!outbox.socket.destroyed) outbox.socket.uncork();
}

class Outbox {
  /** maxBytes: limits.maxOutboundBytes; onOverflow(bufferedBytes): the router does not read; trace: a FrameTrace, or null. */
  constructor(socket, { maxBytes, onOverflow, trace = null }) {
    this.socket = socket;
    this.maxBytes = maxBytes;
    this.onOverflow = onOverflow;
    this.trace = trace;
    this.corked = NOT_CORKED;
  }

  /**
   * `more`: other queries of this connection are still in flight (the burst may wait for the
   * round's end). `soon`: an answer at its deadline, which leaves at the end of this tick whatever
   * else is due (the router's own timeout is close). `reading`: router input is being handled now.
   */
  send(buf, more, soon, reading) {
    const socket = this.socket;
    if (socket.writableEnded || socket.destroyed) return; // after our FIN, or gone
    if (this.corked === NOT_CORKED) {
      // Otherwise nothing to batch with: written now, not after the rest of the tick's work.
      if (soon || reading) this.cork(false);
      else if (more) this.cork(true);
    } else if (this.corked === UNTIL_ROUND && (soon || !more)) {
      this.corked = UNTIL_TICK; // the burst leaves now, not at the round's end
      process.nextTick(uncork, this);
    }
    socket.write(buf);
    if (this.trace !== null && !this.trace.done) this.trace.sent(buf);
    if (socket.writableLength > this.maxBytes) this.onOverflow(socket.writableLength);
  }

  /** What is corked leaves now (answers at their deadline, hundreds of them, in groups; our FIN). */
  flush() {
    uncork(this);
  }

  cork(untilRound) {
    this.socket.cork();
    this.corked = untilRound ? UNTIL_ROUND : UNTIL_TICK;
    if (untilRound) setImmediate(uncork, this);
    else process.nextTick(uncork, this);
  }
}

module.exports = { Outbox };
