'use strict';

// gateway/answer/ alone (fit.js, writer.js): a backend answer made to fit the tag limits, then the frame limit.

const assert = require('node:assert/strict');
const {
  decodeFrame, DIRECTION, des, HEADER_LENGTH, STATUS,
} = require('../../../lib/protocol');
const { fillAnswer } = require('../../../gateway/answer/fit');
const { ReplyWriter } = require('../../../gateway/answer/writer');

const toRouter = (buf, cipher) => decodeFrame(buf, { direction: DIRECTION.HOST_TO_ROUTER, cipher });

describe('fillAnswer', () => {
  it('copies what fits unchanged and notes nothing', () => {
    const resp = {};
    const notes = fillAnswer(resp, {
      vars: { 1: 'a', 10: 'b' }, ecc: { 'user.x': 'y' }, eccArrays: [{ name: 'user.h', index: 3, value: 'z' }], ced: '1#', cdpd: '9',
    });
    assert.deepEqual(notes, []);
    assert.deepEqual(resp, {
      ced: '1#', cdpd: '9', vars: { 1: 'a', 10: 'b' }, ecc: { 'user.x': 'y' }, eccArrays: [{ name: 'user.h', index: 3, value: 'z' }],
    });
  });

  it('numbers and booleans become text; other types and bad ECC names are dropped, each noted; vars keys other than 1..10 are not read', () => {
    const resp = {};
    const notes = fillAnswer(resp, {
      vars: { 1: 42, 2: true, 3: { no: 1 }, 11: 'x', abc: 'y' }, ecc: { '': 'e', [`n${'x'.repeat(40)}`]: 'long', 'caf\u00e9': 'x' },
      eccArrays: [{ name: 'a', index: 256, value: 'v' }, 'junk', { name: 'ok', index: 0 }],
    });
    assert.deepEqual(resp.vars, { 1: '42', 2: 'true' });
    assert.equal(resp.ecc, undefined);
    assert.deepEqual(resp.eccArrays, [{ name: 'ok', index: 0, value: '' }]);
    assert.equal(notes.length, 6, notes.join('\n'));
    assert.ok(!notes.some((n) => /vars\.(11|abc)/.test(n)), notes.join('\n'));
  });

  it('non-ASCII becomes its base letters, and values are cut to the tag limit (255, 248 encrypted) and ECC values to 210', () => {
    const plain = {};
    fillAnswer(plain, { vars: { 1: 'x'.repeat(300), 2: 'Jos\u00e9' }, ecc: { e: 'y'.repeat(300) } });
    assert.equal(plain.vars[1].length, 255);
    assert.equal(plain.vars[2], 'Jose');
    assert.equal(plain.ecc.e.length, 210);
    const enc = {};
    fillAnswer(enc, { vars: { 1: 'x'.repeat(300) } }, des.MAX_ENCRYPTED_FIELD);
    assert.equal(enc.vars[1].length, 248);
  });

  it('200,000 ECC entries or eccArrays elements: only about one frame\'s worth is read', () => {
    let reads = 0;
    const ecc = {};
    for (let i = 0; i < 200_000; i++) Object.defineProperty(ecc, `e${i}`, { enumerable: true, get() { reads++; return 'v'.repeat(20); } });
    const resp = {};
    const notes = fillAnswer(resp, { ecc }, 255, 8192);
    assert.ok(reads < 400, `${reads} ECC values read`);
    assert.deepEqual(Object.keys(resp.ecc), Array.from({ length: reads }, (_, i) => `e${i}`));
    assert.match(notes.at(-1), /ecc entries from 'e\d+' on not read: more than one frame \(8192 bytes\) can carry/);
    let elements = 0;
    const list = Array.from({ length: 200_000 }, (_, i) => ({ name: 'arr', index: i % 256, value: 'x' }));
    const counted = new Proxy(list, { get: (t, k) => { if (typeof k === 'string' && /^\d+$/.test(k)) elements++; return t[k]; } });
    fillAnswer(resp, { eccArrays: counted }, 255, 8192);
    assert.ok(elements < 2000, `${elements} eccArrays elements read`);
  });

  it('200,000 invalid ECC entries or eccArrays elements: the walk stops where a frame of valid ones would', () => {
    let names = 0;
    const keys = new Proxy({}, {
      ownKeys: () => Array.from({ length: 200_000 }, (_, i) => `bad name ${i}`),
      getOwnPropertyDescriptor: () => { names++; return { value: 'v', enumerable: true, configurable: true }; },
    });
    const resp = {};
    fillAnswer(resp, { ecc: keys }, 255, 8192);
    assert.ok(names < 6000, `${names} looks at invalid ECC names`); // two per name (for-in, hasOwn): 2,731 names of 200,000
    let elements = 0;
    const list = Array.from({ length: 200_000 }, () => ({ name: 'arr', index: 300, value: 'x' }));
    const counted = new Proxy(list, { get: (t, k) => { if (typeof k === 'string' && /^\d+$/.test(k)) elements++; return t[k]; } });
    fillAnswer(resp, { eccArrays: counted }, 255, 8192);
    assert.ok(elements < 2000, `${elements} invalid eccArrays elements read`);
  });

  it('a FAILURE_CONF of a 60 KB error text outside ASCII: its first characters converted, cut to the tag', () => {
    const writer = new ReplyWriter({ maxBody: 4096 });
    for (const [text, error] of [['\u00e9'.repeat(30_000), 'e'.repeat(255)], ['\u{1F600}'.repeat(15_000), '?'.repeat(255)]]) {
      const m = toRouter(writer.failureConf(7, STATUS.E_AG_HOST_ERROR2, text));
      assert.deepEqual([m.type, m.status, m.error], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR2, error]);
    }
  });

  it('a 10 MB value is cut before it is converted; notes stop at 20 and say how many more', () => {
    const resp = {};
    const ecc = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`bad name ${i} ${'x'.repeat(40)}`, 'v']));
    const notes = fillAnswer(resp, { vars: { 1: '\u00e9'.repeat(10_000_000) }, ecc });
    assert.equal(resp.vars[1], 'e'.repeat(255), 'transliterated (answers.charset), then cut');
    assert.equal(notes.length, 21);
    assert.equal(notes.at(-1), '... and 32 more change(s)');
  });

  it('a var the answer only inherits is not carried, and its getter is not called', () => {
    const proto = Object.defineProperty({}, '3', { get() { throw new Error('read'); } });
    const vars = Object.assign(Object.create(proto), { 1: 'a' });
    const resp = {};
    assert.deepEqual(fillAnswer(resp, { vars }), []);
    assert.deepEqual(resp.vars, { 1: 'a' });
  });

  it('an ECC name __proto__ stays a plain property', () => {
    const resp = {};
    fillAnswer(resp, JSON.parse('{"ecc": {"__proto__": "v"}}'));
    assert.deepEqual(Object.keys(resp.ecc), ['__proto__']);
    assert.equal(Object.getPrototypeOf(resp.ecc), Object.prototype);
  });
});

describe('ReplyWriter', () => {
  const q = { invokeId: 5 };

  it('a QUERY_RESP that fits is sent whole', () => {
    const { buf, notes } = new ReplyWriter({ maxBody: 8192 }).queryResp(q, { vars: { 1: 'a' }, ecc: { x: 'y' } });
    assert.deepEqual(notes, []);
    const m = toRouter(buf);
    assert.deepEqual([m.type, m.invokeId, m.vars, m.ecc], ['QUERY_RESP', 5, { 1: 'a' }, { x: 'y' }]);
  });

  it('NoScriptReply: status 0 and no tags', () => {
    const { buf } = new ReplyWriter({ maxBody: 8192 }).queryResp({ invokeId: 6, noScriptReply: true }, { vars: { 1: 'a' } });
    assert.equal(buf.length, HEADER_LENGTH + 8);
  });

  for (const encrypted of [false, true]) {
    it(`${encrypted ? 'encrypted' : 'plain'}: over the frame limit, eccArrays then ECC entries go from the end until it fits`, () => {
      const w = new ReplyWriter({ maxBody: 2048 });
      const cipher = encrypted ? des.createSessionCipher(Buffer.from('12345678')) : undefined;
      w.setCipher(cipher);
      const answer = {
        vars: { 1: 'v'.repeat(40) },
        ecc: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`e${i}`, 'x'.repeat(100)])),
        eccArrays: Array.from({ length: 20 }, (_, i) => ({ name: 'arr', index: i, value: 'y'.repeat(100) })),
      };
      const { buf, notes } = w.queryResp(q, answer);
      assert.ok(buf.length - HEADER_LENGTH <= 2048, `${buf.length}`);
      assert.match(notes.at(-1), /dropped from the end: the reply was \d+ bytes, over the frame limit of 2048/);
      const m = toRouter(buf, cipher);
      assert.deepEqual(m.vars, answer.vars);
      assert.equal(m.eccArrays, undefined, 'every array element went before any ECC entry');
      const kept = Object.keys(m.ecc);
      assert.deepEqual(kept, Object.keys(answer.ecc).slice(0, kept.length));
      assert.ok(kept.length >= 10, `${kept.length} ECC entries kept`);
    });
  }

  it('null when the scalars alone do not fit', () => {
    const w = new ReplyWriter({ maxBody: 1024 });
    const { buf } = w.queryResp(q, { vars: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i + 1, 'z'.repeat(255)])) });
    assert.equal(buf, null);
  });

  it('FAILURE_CONF text is printable ASCII cut to the tag limit', () => {
    const m = toRouter(new ReplyWriter({ maxBody: 8192 }).failureConf(7, STATUS.E_AG_HOST_ERROR2, `bad\n\u00e9${'x'.repeat(300)}`));
    assert.equal(m.error.length, 255);
    assert.ok(m.error.startsWith('bad?ex'), m.error);
  });
});
