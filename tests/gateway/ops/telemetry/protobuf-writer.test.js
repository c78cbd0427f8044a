'use strict';

// The protobuf writer's numbers and nested lengths against independent arithmetic: times as fixed64
// nanoseconds (BigInt), varints as protobufjs reads them, and a length-delimited message whose
// length prefix is one to four bytes wide.

const assert = require('node:assert/strict');
const protobuf = require('protobufjs');
const { Writer, varintSize } = require('../../../../gateway/ops/telemetry/protobuf-writer');

/** A seeded generator (mulberry32): the same cases every run. */
function random(seed) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('traces: the protobuf writer', () => {
  it('writes an HrTime as its nanoseconds since the epoch, exactly, a second kept or not', () => {
    const next = random(7);
    const w = new Writer(16);
    const times = [[0, 0], [1, 999_999_999], [4_294_967_295, 999_999_999], [1_764_300_000, 0]];
    for (let i = 0; i < 5000; i++) {
      const seconds = Math.floor(next() * 4_294_967_296);
      times.push([seconds, Math.floor(next() * 1e9)], [seconds, Math.floor(next() * 1e9)]);
    }
    for (const [seconds, nanos] of times) {
      w.pos = 0;
      w.hrTime([seconds, nanos]);
      assert.equal(w.buf.readBigUInt64LE(0), BigInt(seconds) * 1_000_000_000n + BigInt(nanos), `${seconds}, ${nanos}`);
    }
  });

  it('writes varints and int64s as protobuf reads them, and says how wide a varint is', () => {
    const values = [0, 1, 127, 128, 16_383, 16_384, 2 ** 21 - 1, 2 ** 21, 2 ** 28, 2 ** 32 - 1];
    for (const v of values) {
      const w = new Writer(4);
      w.uint32(v);
      assert.equal(w.pos, varintSize(v));
      assert.equal(protobuf.Reader.create(w.buf.subarray(0, w.pos)).uint32(), v >>> 0);
    }
    for (const v of [0, 5, 2 ** 32, 2 ** 40, -1, -(2 ** 40), Number.MAX_SAFE_INTEGER]) {
      const w = new Writer(4);
      w.int64(v);
      assert.equal(protobuf.Reader.create(w.buf.subarray(0, w.pos)).int64().toString(), String(v));
    }
  });

  for (const size of [0, 127, 128, 16_383, 16_384, 2_097_152]) {
    it(`closes a message of ${size} bytes behind its length, the gap moved back`, () => {
      const w = new Writer(8);
      w.uint32(0x0a);
      const at = w.open();
      w.raw(Buffer.alloc(size, 0x61));
      w.close(at);
      w.uint32(0x10);
      const reader = protobuf.Reader.create(w.buf.subarray(0, w.pos));
      assert.equal(reader.uint32(), 0x0a);
      assert.equal(reader.bytes().length, size);
      assert.equal(reader.uint32(), 0x10);
      assert.equal(reader.pos, w.pos);
    });
  }
});
