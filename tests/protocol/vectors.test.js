'use strict';

// vectors.json replayed table-driven: decode, encode and round trip for every valid vector,
// kind/code/InvokeID for every invalid one, fed whole, byte by byte, at every split and in pairs.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Framer, MessageReader, decodeFrame, encode, DIRECTION,
} = require('../../lib/protocol');

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'vectors.json');
const vectors = JSON.parse(fs.readFileSync(FIXTURE, 'utf8'));

// What the bytes of some vectors carry that their fields cannot: which scalar tags the sender
// NUL-terminated, and a trailing Status word that decoding drops (it re-encodes canonically).
const ENCODE_OPTIONS = {
  open_req_with_config: { nul: ['config'] },
  query_req_full: { nul: ['subtype', 'clid', 'vars.1'] },
};
const CANONICAL = { close_req_with_status: '000000040000000500000009' };

const directionOf = (v) => (v.direction === 'host->router' ? DIRECTION.HOST_TO_ROUTER : DIRECTION.ROUTER_TO_HOST);

/** The vectors name an error in kebab case (frame-too-large); the codec's code is ERR_GED145_FRAME_TOO_LARGE. */
const codeOf = (name) => `ERR_GED145_${name.toUpperCase().replace(/-/g, '_')}`;

/** The decoded message without absent (undefined) fields, to compare with a vector's fields. */
function present(msg) {
  const out = {};
  for (const [k, v] of Object.entries(msg)) if (v !== undefined) out[k] = v;
  return out;
}

function readAll(chunks, direction) {
  const messages = [];
  const errors = [];
  const reader = new MessageReader({
    direction,
    onMessage: (m) => messages.push(present(m)),
    onError: (e) => errors.push(e),
  });
  for (const c of chunks) reader.push(c);
  return { messages, errors, reader };
}

describe('vectors.json', () => {
  describe('valid vectors', () => {
    for (const v of vectors.valid) {
      const bytes = Buffer.from(v.hex, 'hex');
      describe(v.name, () => {
        it('decodes to its fields', () => {
          const msg = decodeFrame(bytes, { direction: directionOf(v) });
          assert.deepEqual(present(msg), v.fields);
        });

        it('encodes back to its exact bytes', () => {
          assert.equal(encode(v.fields, ENCODE_OPTIONS[v.name]).toString('hex'), CANONICAL[v.name] || v.hex);
        });

        it('round-trips decode -> encode -> decode', () => {
          const first = decodeFrame(bytes, { direction: directionOf(v) });
          const again = encode(first);
          assert.deepEqual(present(decodeFrame(again, { direction: directionOf(v) })), present(first));
        });

        it('decodes the same when split at every byte boundary', () => {
          for (let cut = 1; cut < bytes.length; cut++) {
            const { messages, errors } = readAll([bytes.subarray(0, cut), bytes.subarray(cut)], directionOf(v));
            assert.deepEqual(errors, []);
            assert.deepEqual(messages, [v.fields], `split at ${cut}`);
          }
        });

        it('decodes the same when fed one byte at a time', () => {
          const chunks = [...bytes].map((b) => Buffer.from([b]));
          const { messages, errors } = readAll(chunks, directionOf(v));
          assert.deepEqual(errors, []);
          assert.deepEqual(messages, [v.fields]);
        });
      });
    }

    it('every pair of vectors in one chunk decodes to both, in order', () => {
      for (const a of vectors.valid) {
        for (const b of vectors.valid) {
          if (directionOf(a) !== directionOf(b)) continue;
          const chunk = Buffer.concat([Buffer.from(a.hex, 'hex'), Buffer.from(b.hex, 'hex')]);
          const { messages, errors } = readAll([chunk], directionOf(a));
          assert.deepEqual(errors, []);
          assert.deepEqual(messages, [a.fields, b.fields], `${a.name} + ${b.name}`);
        }
      }
    });
  });

  describe('invalid vectors', () => {
    for (const v of vectors.invalid) {
      const bytes = Buffer.from(v.hex, 'hex');
      it(`${v.name}: ${v.expect.kind}${v.expect.code ? ` ${v.expect.code}` : ''}`, () => {
        for (const chunks of [[bytes], [...bytes].map((b) => Buffer.from([b]))]) {
          const { messages, errors } = readAll(chunks, DIRECTION.ROUTER_TO_HOST);
          assert.equal(messages.length, 0);
          assert.equal(errors.length, 1);
          const [err] = errors;
          assert.equal(err.kind, v.expect.kind);
          if (v.expect.code) assert.equal(err.code, codeOf(v.expect.code));
          if (v.expect.status !== undefined) assert.equal(err.status, v.expect.status);
          assert.equal(err.invokeId, v.expect.invokeId);
        }
      });
    }

    it('a reject leaves the stream usable: the next frame decodes', () => {
      const good = vectors.valid.find((v) => v.name === 'heartbeat_req');
      for (const bad of vectors.invalid.filter((v) => v.expect.kind === 'reject')) {
        const chunk = Buffer.concat([Buffer.from(bad.hex, 'hex'), Buffer.from(good.hex, 'hex')]);
        const { messages, errors } = readAll([chunk], DIRECTION.ROUTER_TO_HOST);
        assert.equal(errors.length, 1, bad.name);
        assert.deepEqual(messages, [good.fields], bad.name);
      }
    });

    it('frame-too-large is reported before the body arrives and stops the framer', () => {
      const frames = [];
      const errors = [];
      const framer = new Framer({ onFrame: (t, b) => frames.push(b), onError: (e) => errors.push(e) });
      framer.push(Buffer.from('7ffffff000000009', 'hex'));
      assert.equal(errors.length, 1);
      assert.equal(errors[0].code, 'ERR_GED145_FRAME_TOO_LARGE');
      assert.equal(framer.bufferedBytes, 0);
      framer.push(Buffer.from('000000040000000700000002', 'hex'));
      assert.equal(frames.length, 0);
      assert.equal(errors.length, 1, 'a failed framer reports once and stays silent');
    });
  });
});
