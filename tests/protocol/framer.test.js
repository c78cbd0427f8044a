'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { Framer, serialize } = require('../../lib/protocol');

function collect(options = {}) {
  const frames = [];
  const errors = [];
  const framer = new Framer({
    ...options,
    onFrame: (typeId, body) => frames.push({ typeId, body }),
    onError: (e) => errors.push(e),
  });
  return { framer, frames, errors };
}

describe('Framer', () => {
  it('hands out a frame that lies inside one chunk as a view of that chunk', () => {
    const { framer, frames } = collect();
    const chunk = Buffer.concat([serialize.heartbeatReq(1), serialize.heartbeatReq(2)]);
    framer.push(chunk);
    assert.equal(frames.length, 2);
    assert.equal(frames[0].body.buffer, chunk.buffer);
    assert.equal(frames[0].body.byteOffset, chunk.byteOffset + 8);
    assert.equal(frames[1].body.byteOffset, chunk.byteOffset + 20);
  });

  it('copies a frame that spans chunks once, into a buffer of exactly its size', () => {
    const { framer, frames } = collect();
    const bytes = Buffer.from(serialize.queryReq({ invokeId: 7, routerCallDay: 1, routerCallKey: 2, subtype: 'echo', clid: '5551234' }));
    const first = Buffer.from(bytes.subarray(0, 13));
    const second = Buffer.from(bytes.subarray(13));
    framer.push(first);
    framer.push(second);
    assert.equal(frames.length, 1);
    const { body } = frames[0];
    assert.equal(body.length, bytes.length - 8);
    first.fill(0); // the chunks may be reused by their owner: the body must not change
    second.fill(0);
    assert.deepEqual(body, bytes.subarray(8));
  });

  it('never overwrites a body it handed out', () => {
    const { framer, frames } = collect();
    const a = serialize.queryReq({ invokeId: 1, routerCallDay: 1, routerCallKey: 1, subtype: 'aaaa' });
    const b = serialize.queryReq({ invokeId: 2, routerCallDay: 2, routerCallKey: 2, subtype: 'bbbb' });
    // Every frame split across chunks, header split too, so every path copies.
    const stream = Buffer.concat([a, b, a, b]);
    for (let i = 0; i < stream.length; i += 3) framer.push(Buffer.from(stream.subarray(i, i + 3)));
    assert.equal(frames.length, 4);
    assert.deepEqual(frames.map((f) => Buffer.from(f.body)), [a, b, a, b].map((x) => x.subarray(8)));
  });

  it('passes an empty body for MessageLength 0', () => {
    const { framer, frames } = collect();
    framer.push(Buffer.from('0000000000000007', 'hex'));
    framer.push(Buffer.from('00000000', 'hex'));
    framer.push(Buffer.from('00000007', 'hex'));
    assert.deepEqual(frames.map((f) => [f.typeId, f.body.length]), [[7, 0], [7, 0]]);
  });

  it('checks MessageLength against a configurable limit as soon as the header is complete', () => {
    const { framer, frames, errors } = collect({ maxMessageLength: 16 });
    framer.push(serialize.heartbeatReq(1));
    framer.push(Buffer.from('00000011', 'hex'));
    assert.equal(errors.length, 0);
    framer.push(Buffer.from('00000009', 'hex')); // header complete: 17 > 16
    assert.equal(frames.length, 1);
    assert.equal(errors.length, 1);
    assert.equal(errors[0].code, 'ERR_GED145_FRAME_TOO_LARGE');
    assert.equal(errors[0].fatal, true);
  });

  it('stays consistent when a frame callback throws', () => {
    let calls = 0;
    const seen = [];
    const framer = new Framer({
      onFrame: (t, body) => {
        calls++;
        if (calls === 1) throw new Error('handler bug');
        seen.push(body.readUInt32BE(0));
      },
    });
    const one = serialize.heartbeatReq(1);
    assert.throws(() => framer.push(one), /handler bug/);
    framer.push(serialize.heartbeatReq(2));
    assert.deepEqual(seen, [2]);
  });

  it('property: random byte streams never throw and never buffer more than the limit', () => {
    fc.assert(fc.property(
      fc.array(fc.uint8Array({ minLength: 0, maxLength: 64 }), { maxLength: 40 }),
      fc.integer({ min: 0, max: 300 }),
      (chunks, limit) => {
        let failures = 0;
        const framer = new Framer({
          maxMessageLength: limit,
          onFrame: (t, body) => { assert.ok(body.length <= limit); },
          onError: () => { failures++; },
        });
        for (const c of chunks) {
          framer.push(Buffer.from(c));
          assert.ok(framer.bufferedBytes <= 8 + limit);
        }
        assert.ok(failures <= 1);
        return true;
      },
    ), { numRuns: 500 });
  });

  it('property: any chunking of a stream of frames yields the same frames', () => {
    const frameArb = fc.tuple(fc.integer({ min: 0, max: 20 }), fc.uint8Array({ maxLength: 100 }))
      .map(([typeId, body]) => {
        const b = Buffer.alloc(8 + body.length);
        b.writeUInt32BE(body.length, 0);
        b.writeUInt32BE(typeId, 4);
        Buffer.from(body).copy(b, 8);
        return b;
      });
    fc.assert(fc.property(fc.array(frameArb, { maxLength: 10 }), fc.array(fc.nat(), { maxLength: 20 }), (frames, cuts) => {
      const stream = Buffer.concat(frames);
      const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((x, y) => x - y);
      const { framer, frames: out, errors } = collect();
      let last = 0;
      for (const p of [...points, stream.length]) {
        framer.push(stream.subarray(last, p));
        last = p;
      }
      assert.equal(errors.length, 0);
      assert.deepEqual(out.map((f) => Buffer.from(f.body)), frames.map((f) => f.subarray(8)));
      assert.deepEqual(out.map((f) => f.typeId), frames.map((f) => f.readUInt32BE(4)));
    }), { numRuns: 300 });
  });
});
