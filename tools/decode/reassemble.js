'use strict';

// GED-145 out of byte streams and captures, as `ged145 decode` and `ged145 replay` read them: a
// decoder per direction (StreamDecoder), TCP reassembly per direction of each stream
// (DirectionStream: retransmissions dropped, out-of-order segments held, bounded), and a whole
// capture decoded stream by stream (decodeCapture), each entry handed on as soon as it is read.

const {
  Framer, decode, des, DIRECTION, ERROR_CODES, MESSAGE_TYPES: T, DEFAULT_PROFILE, HEADER_LENGTH,
} = require('../../lib/protocol');
const { segments } = require('./capture');

const OTHER = { [DIRECTION.ROUTER_TO_HOST]: DIRECTION.HOST_TO_ROUTER, [DIRECTION.HOST_TO_ROUTER]: DIRECTION.ROUTER_TO_HOST };

/**
 * Decodes one direction's bytes as they come: push(bytes, ts) hands each entry to emit(entry) as
 * soon as its frame is complete. `direction` null means each message's direction is taken from
 * its type. cipher: set when an encrypted session opens.
 */
class StreamDecoder {
  constructor({
    direction, maxLength, onMessage, emit, profile = DEFAULT_PROFILE, keepBytes = false,
  }) {
    this.direction = direction;
    this.keepBytes = keepBytes; // each entry carries its frame's bytes (`ged145 replay` sends them again)
    this.profile = profile;
    this.cipher = undefined;
    this.ts = null;
    this.emit = emit;
    this.onMessage = onMessage || (() => {});
    this.framer = new Framer({
      maxMessageLength: maxLength,
      onFrame: (typeId, body) => this.frame(typeId, body),
      onError: (err) => this.emit({ ts: this.ts, direction: this.direction, error: err.reason, text: err.message }),
    });
    this.stopped = false;
  }

  push(bytes, ts = null) {
    this.ts = ts;
    if (this.stopped) return;
    if (this.framer.failed) {
      this.emit({ ts, direction: this.direction, error: 'not_read', text: 'bytes after a fatal frame are not decoded' });
      this.stopped = true;
      return;
    }
    this.framer.push(bytes);
  }

  /** The capture lost bytes of this direction: nothing after them can be framed. */
  gap(missing, ts) {
    if (this.stopped) return;
    this.emit({
      ts, direction: this.direction, error: 'missing', text: `${missing} bytes of this direction are not in the capture; the rest of it is not decoded`,
    });
    this.stopped = true;
  }

  frame(typeId, body) {
    const bytes = this.keepBytes ? frameBytes(typeId, body) : undefined;
    const tryDecode = (direction) => decode(typeId, body, direction, this.cipher, this.profile);
    let direction = this.direction || DIRECTION.ROUTER_TO_HOST;
    let msg;
    try {
      try {
        msg = tryDecode(direction);
      } catch (err) {
        if (this.direction !== null || err.code !== ERROR_CODES.WRONG_DIRECTION) throw err;
        direction = OTHER[direction];
        msg = tryDecode(direction);
      }
    } catch (err) {
      this.emit({
        ts: this.ts, direction, error: err.reason || 'error', text: err.message, invokeId: err.invokeId, bytes,
      });
      return;
    }
    this.onMessage(msg, direction);
    this.emit({
      ts: this.ts, direction, message: msg, bytes,
    });
  }

  /** What is left unread at the end: a frame cut off by the end of the input. */
  finish() {
    if (!this.stopped && !this.framer.failed && this.framer.bufferedBytes > 0) {
      this.emit({
        ts: this.ts, direction: this.direction, error: 'incomplete', text: `${this.framer.bufferedBytes} bytes of an unfinished frame at the end`,
      });
    }
  }
}

/** Bytes that are not a capture: one stream of frames. */
function decodeBytes(buf, {
  direction, maxLength, emit, profile,
}) {
  const d = new StreamDecoder({
    direction, maxLength, emit, profile,
  });
  d.push(buf);
  d.finish();
}

/** Segments of one direction held back while an earlier one is missing, at most this many bytes. */
const MAX_HELD_BYTES = 4 * 1024 * 1024;

/**
 * One direction of a TCP stream, reassembled as segments come: bytes in sequence order go to
 * its decoder at once; a segment ahead of a missing one waits (bounded); retransmitted bytes are
 * dropped.
 */
class DirectionStream {
  constructor(decoder) {
    this.decoder = decoder;
    this.next = null; // the sequence number of the next byte expected
    this.held = new Map(); // seq -> segment, waiting for the bytes before it
    this.heldBytes = 0;
  }

  add(seg) {
    if (this.next === null) this.next = seg.seq;
    const skip = (this.next - seg.seq) | 0;
    if (skip > 0) {
      if (skip >= seg.data.length) return; // all of it seen already
      this.deliver(seg.data.subarray(skip), seg.ts);
    } else if (skip < 0) {
      if (!this.held.has(seg.seq)) {
        this.held.set(seg.seq, seg);
        this.heldBytes += seg.data.length;
      }
      if (this.heldBytes > MAX_HELD_BYTES) this.giveUp(seg.ts);
      return;
    } else {
      this.deliver(seg.data, seg.ts);
    }
    this.drain();
  }

  deliver(data, ts) {
    this.decoder.push(data, ts);
    this.next = (this.next + data.length) >>> 0;
  }

  /** Held segments that now follow on. */
  drain() {
    for (let progress = true; progress && this.held.size > 0;) {
      progress = false;
      for (const [seq, seg] of this.held) {
        const skip = (this.next - seq) | 0;
        if (skip < 0) continue;
        this.held.delete(seq);
        this.heldBytes -= seg.data.length;
        if (skip < seg.data.length) this.deliver(seg.data.subarray(skip), seg.ts);
        progress = true;
      }
    }
  }

  giveUp(ts) {
    let first = null;
    for (const seq of this.held.keys()) if (first === null || ((seq - first) | 0) < 0) first = seq;
    this.decoder.gap(first === null ? 0 : (first - this.next) >>> 0, ts);
    this.held.clear();
    this.heldBytes = 0;
  }

  finish() {
    if (this.held.size > 0) this.giveUp(this.decoder.ts);
    this.decoder.finish();
  }
}

/**
 * A capture: every TCP stream with GED-145 in it, both directions, each message handed to emit
 * as it is decoded, in capture order. source: a BufferSource or FileSource (capture.js).
 * Returns what the caller may want to tell the user: {streams, encrypted}.
 */
function decodeCapture(source, {
  port, desKey, maxLength, emit, withStream, profile = DEFAULT_PROFILE, keepBytes = false,
}) {
  const streams = new Map();
  let t0 = null;
  const found = { streams: 0, encrypted: 0 };
  for (const s of segments(source)) {
    if (t0 === null) t0 = s.ts;
    const a = `${s.src}:${s.srcPort}`;
    const b = `${s.dst}:${s.dstPort}`;
    const key = a < b ? `${a}|${b}` : `${b}|${a}`;
    let st = streams.get(key);
    if (st === undefined) {
      st = {
        key, host: null, name: null, cipher: undefined, directions: {},
      };
      streams.set(key, st);
    }
    if (s.syn && !s.ack) st.host = b; // the SYN goes to the host
    if (port !== undefined && s.dstPort === port) st.host = b;
    if (port !== undefined && s.srcPort === port) st.host = a;
    if (s.data.length === 0) continue;
    if (port !== undefined && st.host === null) continue; // not a stream of the given port
    if (st.host === null) st.host = guessHost(s, a, b, maxLength, profile);
    if (st.name === null) {
      st.name = [...new Set([key.split('|').find((e) => e !== st.host), st.host])].join(' -> ');
      found.streams++;
    }
    const direction = b === st.host ? DIRECTION.ROUTER_TO_HOST : DIRECTION.HOST_TO_ROUTER;
    let dir = st.directions[direction];
    if (dir === undefined) {
      const onMessage = (msg) => {
        if (msg.typeId !== T.OPEN_REQ || msg.encryption !== 1) return;
        if (!desKey || !msg.sessionKey) {
          found.encrypted++;
          return;
        }
        const k = des.openSessionKey(desKey, msg.sessionKey);
        st.cipher = k === null ? undefined : des.createSessionCipher(k);
        for (const d of Object.values(st.directions)) d.decoder.cipher = st.cipher;
      };
      const streamEmit = (e) => emit(withStream(st.name) ? { ...e, stream: st.name } : e);
      dir = new DirectionStream(new StreamDecoder({
        direction, maxLength, onMessage, emit: streamEmit, profile, keepBytes,
      }));
      dir.decoder.cipher = st.cipher;
      st.directions[direction] = dir;
    }
    dir.add({ seq: s.seq, data: s.data, ts: s.ts - t0 });
  }
  for (const st of streams.values()) for (const d of Object.values(st.directions)) d.finish();
  return found;
}

/** Without a SYN, from the first segment with data: the side an OPEN_REQ goes to, else the side that receives first. */
function guessHost(s, from, to, maxLength, profile) {
  const d = s.data;
  if (d.length >= 8 && d.readUInt32BE(0) <= maxLength) {
    const type = d.readUInt32BE(4);
    if (type === profile.typeToWire(T.OPEN_REQ)) return to;
    for (const t of [T.OPEN_CONF, T.QUERY_RESP, T.HEARTBEAT_CONF, T.FAILURE_CONF, T.FAILURE_EVENT, T.CLOSE_CONF, T.PARAM_CONF]) {
      if (type === profile.typeToWire(t)) return from;
    }
  }
  return to;
}

/** A whole frame again, header and body (its body may be a view of a chunk that is reused). */
function frameBytes(typeId, body) {
  const buf = Buffer.allocUnsafe(HEADER_LENGTH + body.length);
  buf.writeUInt32BE(body.length, 0);
  buf.writeUInt32BE(typeId, 4);
  body.copy(buf, HEADER_LENGTH);
  return buf;
}

module.exports = {
  StreamDecoder, DirectionStream, decodeBytes, decodeCapture,
};
