'use strict';

// Fault injection on the router's side of the wire: invalid frames with the consequence the
// host should draw from each (reject: FAILURE_CONF E_AG_INVALID_MESSAGE for its InvokeID;
// fatal: close the connection), and a writer that fragments or coalesces what it sends.

const { HEADER_LENGTH } = require('../lib/protocol');

const BASE_QUERY = { routerCallDay: 1, routerCallKey: 1, subtype: 'echo' };

/** Invalid frame kinds: build(invokeId, rnd, serialize) -> Buffer, and what the host must do (serialize: the connection's, of its profile). */
const INVALID_KINDS = {
  'unknown-type': {
    expect: 'reject',
    build(invokeId, rnd, serialize) {
      const b = serialize.heartbeatReq(invokeId);
      b.writeUInt32BE(13 + Math.floor(rnd() * 1000), 4); // no type above 12 exists
      return b;
    },
  },
  truncated: {
    expect: 'reject',
    build(invokeId, rnd, serialize) {
      const full = serialize.queryReq({ ...BASE_QUERY, invokeId });
      const b = Buffer.from(full.subarray(0, HEADER_LENGTH + 6)); // fixed part needs 13
      b.writeUInt32BE(6, 0);
      return b;
    },
  },
  'tag-overrun': {
    expect: 'reject',
    build(invokeId, rnd, serialize) {
      const b = serialize.queryReq({ ...BASE_QUERY, invokeId });
      b[HEADER_LENGTH + 13 + 1] = 200; // the SUBTYPE tag's length now runs past the body
      return b;
    },
  },
  dangling: {
    expect: 'reject',
    build(invokeId, rnd, serialize) {
      const full = serialize.queryReq({ ...BASE_QUERY, invokeId });
      const b = Buffer.concat([full, Buffer.from([5])]);
      b.writeUInt32BE(full.length - HEADER_LENGTH + 1, 0);
      return b;
    },
  },
  'bad-ecc': {
    expect: 'reject',
    build(invokeId, rnd, serialize) {
      const b = serialize.queryReq({ ...BASE_QUERY, invokeId, unknownTags: [{ tag: 20, data: Buffer.from('user.acct') }] });
      return b;
    },
  },
  'wrong-direction': {
    expect: 'reject',
    build(invokeId, rnd, serialize) {
      return serialize.queryResp({ invokeId, status: 0 });
    },
  },
  oversized: {
    expect: 'fatal',
    build(invokeId, rnd, serialize) {
      const b = serialize.heartbeatReq(invokeId);
      b.writeUInt32BE(0x80000000 + Math.floor(rnd() * 0x7fffffff), 0);
      return b;
    },
  },
  garbage: {
    expect: 'fatal',
    build(invokeId, rnd) {
      const b = Buffer.alloc(8 + Math.floor(rnd() * 64));
      for (let i = 0; i < b.length; i++) b[i] = Math.floor(rnd() * 256);
      b[0] |= 0x80; // a MessageLength no host accepts, then noise
      return b;
    },
  },
};

const REJECT_KINDS = Object.keys(INVALID_KINDS).filter((k) => INVALID_KINDS[k].expect === 'reject');
const FATAL_KINDS = Object.keys(INVALID_KINDS).filter((k) => INVALID_KINDS[k].expect === 'fatal');

/**
 * Writes frames to a socket as the injection settings say:
 *   frag: up to N extra random split points per write (0 = whole writes)
 *   byteByByte: every byte its own write
 *   fragDelayMs: pause between the pieces of one frame (order is kept)
 *   coalesce: frames sent in the same tick go out as one write
 */
class FrameWriter {
  /** onWrite(piece): told of every piece handed to the socket (the pcap capture). */
  constructor(socket, {
    frag = 0, byteByByte = false, fragDelayMs = 0, coalesce = false,
  } = {}, rnd = Math.random, { onWrite } = {}) {
    this.socket = socket;
    this.onWrite = onWrite;
    this.frag = frag;
    this.byteByByte = byteByByte;
    this.fragDelayMs = fragDelayMs;
    this.coalesce = coalesce;
    this.rnd = rnd;
    this.batch = [];
    this.queue = []; // pieces waiting behind a delay
    this.timer = null;
    this.plain = !frag && !byteByByte && !coalesce;
  }

  /** Hands one piece to the socket. */
  out(piece) {
    if (this.onWrite !== undefined) this.onWrite(piece);
    return this.socket.write(piece);
  }

  write(buf) {
    if (this.plain) return this.out(buf);
    if (this.coalesce) {
      if (this.batch.length === 0) setImmediate(() => this.flushBatch());
      this.batch.push(buf);
      return true;
    }
    this.pieces(buf);
    return true;
  }

  flushBatch() {
    const all = this.batch.length === 1 ? this.batch[0] : Buffer.concat(this.batch);
    this.batch = [];
    if (this.frag || this.byteByByte) this.pieces(all);
    else if (!this.socket.destroyed) this.out(all);
  }

  pieces(buf) {
    const parts = [];
    if (this.byteByByte) {
      for (let i = 0; i < buf.length; i++) parts.push(buf.subarray(i, i + 1));
    } else {
      const n = Math.floor(this.rnd() * (this.frag + 1));
      const cuts = new Set();
      for (let i = 0; i < n && buf.length > 1; i++) cuts.add(1 + Math.floor(this.rnd() * (buf.length - 1)));
      let last = 0;
      for (const c of [...cuts].sort((a, b) => a - b)) {
        parts.push(buf.subarray(last, c));
        last = c;
      }
      parts.push(buf.subarray(last));
    }
    if (this.fragDelayMs > 0 || this.queue.length > 0) {
      this.queue.push(...parts);
      if (this.timer === null) this.drainQueue();
    } else {
      for (const p of parts) if (!this.socket.destroyed) this.out(p);
    }
  }

  drainQueue() {
    this.timer = null;
    const p = this.queue.shift();
    if (p === undefined || this.socket.destroyed) {
      this.queue = [];
      return;
    }
    this.out(p);
    if (this.queue.length > 0) this.timer = setTimeout(() => this.drainQueue(), this.fragDelayMs);
  }

  stop() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.queue = [];
    this.batch = [];
  }
}

module.exports = { INVALID_KINDS, REJECT_KINDS, FATAL_KINDS, FrameWriter };
