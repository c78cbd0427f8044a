'use strict';

// The protobuf wire format as otlp-protobuf.js writes it: varints, fixed-width numbers, strings
// and hex ids into one buffer that grows by doubling and is kept from message to message. A
// length-delimited message is written after a gap as wide as the widest length prefix (GAP) and
// moved back once its length is known, so that a message is written in one pass, never sized first.

const GAP = 5; // the widest length prefix: a varint of 32 bits
const TWO_32 = 2 ** 32;

/** A growable buffer, written forward; kept from batch to batch (one export at a time, and each batch copied out). */
class Writer {
  constructor(size = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
    this.pos = 0;
    this.seconds = -1; // hrTime()'s last seconds, and their nanoseconds as two 32-bit halves
    this.secondsLow = 0;
    this.secondsHigh = 0;
  }

  ensure(n) {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A varint of at most 32 bits (tags, lengths, counts). */
  uint32(v) {
    this.ensure(GAP);
    const { buf } = this;
    while (v > 0x7f) {
      buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[this.pos++] = v;
  }

  /** An int64 varint of an integer number (a negative one is ten bytes, as protobuf writes it). */
  int64(v) {
    if (v >= 0 && v < TWO_32) {
      this.uint32(v);
      return;
    }
    let big = BigInt.asUintN(64, BigInt(v));
    this.ensure(10);
    while (big > 0x7fn) {
      this.buf[this.pos++] = Number(big & 0x7fn) | 0x80;
      big >>= 7n;
    }
    this.buf[this.pos++] = Number(big);
  }

  fixed32(v) {
    this.ensure(4);
    this.le32(v >>> 0, this.pos);
    this.pos += 4;
  }

  double(v) {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /**
   * An HrTime [seconds, nanoseconds] as fixed64 nanoseconds, in exact integer arithmetic (seconds
   * * 1e9 is past 2^53); the last second's product is kept, since a batch's spans share their seconds.
   */
  hrTime(time) {
    const seconds = time[0];
    if (seconds !== this.seconds) {
      const high16 = Math.floor(seconds / 65536) * 1e9; // < 2^46: exact
      const rest = (seconds % 65536) * 1e9; // < 2^46: exact
      const low = (high16 % 65536) * 65536 + (rest % TWO_32);
      this.seconds = seconds;
      this.secondsLow = low % TWO_32;
      this.secondsHigh = Math.floor(high16 / 65536) + Math.floor(rest / TWO_32) + Math.floor(low / TWO_32);
    }
    let low = this.secondsLow + time[1]; // nanoseconds < 2^30: at most one carry
    let high = this.secondsHigh;
    if (low >= TWO_32) {
      low -= TWO_32;
      high += 1;
    }
    this.ensure(8);
    this.le32(low, this.pos);
    this.le32(high, this.pos + 4);
    this.pos += 8;
  }

  le32(v, at) {
    const { buf } = this;
    buf[at] = v & 0xff;
    buf[at + 1] = (v >>> 8) & 0xff;
    buf[at + 2] = (v >>> 16) & 0xff;
    buf[at + 3] = v >>> 24;
  }

  string(s) {
    const n = Buffer.byteLength(s);
    this.uint32(n);
    this.ensure(n);
    this.pos += this.buf.utf8Write(s, this.pos, n);
  }

  /** A hex id (trace, span) as its bytes, length first. */
  hexBytes(hex) {
    const n = hex.length >>> 1;
    this.uint32(n);
    this.ensure(n);
    this.pos += this.buf.hexWrite(hex, this.pos, n);
  }

  raw(bytes) {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Opens a length-delimited message: returns where its gap starts; close() with it. */
  open() {
    this.ensure(GAP);
    const at = this.pos;
    this.pos += GAP;
    return at;
  }

  close(at) {
    const length = this.pos - at - GAP;
    let width = 1;
    for (let v = length; v > 0x7f; v >>>= 7) width++;
    const body = at + GAP;
    if (width < GAP) this.buf.copyWithin(at + width, body, this.pos);
    let v = length;
    let i = at;
    while (v > 0x7f) {
      this.buf[i++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[i] = v;
    this.pos -= GAP - width;
  }
}

/** How many bytes the varint of v (below 2^32) takes. */
const varintSize = (v) => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);

module.exports = { Writer, GAP, varintSize };
