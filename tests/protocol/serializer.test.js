'use strict';

const assert = require('node:assert/strict');
const fc = require('fast-check');
const {
  encode, decodeFrame, serialize, EncodeError, STATUS, DIRECTION,
} = require('../../lib/protocol');

const frameOf = (buf, direction) => decodeFrame(buf, { direction });
const present = (msg) => Object.fromEntries(Object.entries(msg).filter(([, v]) => v !== undefined));

describe('serializer', () => {
  const refusals = [
    ['a tag over 255 bytes', () => serialize.queryResp({ invokeId: 1, vars: { 1: 'x'.repeat(256) } }), 'ERR_GED145_ENCODE_TAG_TOO_LONG'],
    ['non-ASCII text', () => serialize.queryResp({ invokeId: 1, clid: 'caf\u00e9' }), 'ERR_GED145_ENCODE_NON_ASCII'],
    ['a NUL inside a scalar', () => serialize.queryResp({ invokeId: 1, ced: 'a\0b' }), 'ERR_GED145_ENCODE_NON_ASCII'],
    ['an InvokeID over UINT32', () => serialize.heartbeatConf(2 ** 32), 'ERR_GED145_ENCODE_OUT_OF_RANGE'],
    ['a negative InvokeID', () => serialize.openConf(-1), 'ERR_GED145_ENCODE_OUT_OF_RANGE'],
    ['a fractional InvokeID', () => serialize.openConf(1.5), 'ERR_GED145_ENCODE_OUT_OF_RANGE'],
    ['a variable number outside 1..10', () => serialize.queryResp({ invokeId: 1, vars: { 11: 'x' } }), 'ERR_GED145_ENCODE_BAD_VAR'],
    ['a non-string value', () => serialize.queryResp({ invokeId: 1, vars: { 1: 42 } }), 'ERR_GED145_ENCODE_NOT_TEXT'],
    ['an empty ECC name', () => serialize.queryResp({ invokeId: 1, ecc: { '': 'x' } }), 'ERR_GED145_ENCODE_BAD_ECC'],
    ['an ECC pair over 255 bytes', () => serialize.queryResp({ invokeId: 1, ecc: { n: 'v'.repeat(254) } }), 'ERR_GED145_ENCODE_TAG_TOO_LONG'],
    ['an ECC array index over 255', () => serialize.queryResp({ invokeId: 1, eccArrays: [{ name: 'a', index: 256, value: '' }] }),
      'ERR_GED145_ENCODE_OUT_OF_RANGE'],
    ['an unknown status', () => serialize.failureConf(1, 'E_NOPE'), 'ERR_GED145_ENCODE_BAD_STATUS'],
    ['an unknown message type', () => encode({ type: 'NOPE' }), 'ERR_GED145_ENCODE_UNKNOWN_TYPE'],
  ];
  for (const [what, fn, code] of refusals) {
    it(`refuses ${what} with code ${code}`, () => {
      assert.throws(fn, (err) => err instanceof EncodeError && err.code === code);
    });
  }

  it('packs ECC pairs into as few 255-byte tags as they fit, and they decode back', () => {
    const ecc = {};
    for (let i = 0; i < 20; i++) ecc[`user.v${String(i).padStart(2, '0')}`] = 'x'.repeat(30);
    const buf = serialize.queryResp({ invokeId: 1, status: 0, ecc });
    assert.deepEqual(frameOf(buf, DIRECTION.HOST_TO_ROUTER).ecc, ecc);
    // 20 pairs of 40 bytes: 6 fit in a 255-byte tag -> 4 tags of 2 header bytes each
    assert.equal(buf.length, 8 + 8 + 20 * 40 + 4 * 2);
  });

  it('takes status by name or number', () => {
    assert.deepEqual(serialize.failureConf(3, 'E_AG_HOST_ERROR1', 'x'), serialize.failureConf(3, STATUS.E_AG_HOST_ERROR1, 'x'));
  });

  const text = (max) => fc.string({ unit: fc.integer({ min: 1, max: 127 }).map((c) => String.fromCharCode(c)), maxLength: max });
  const name = fc.string({ unit: fc.integer({ min: 1, max: 127 }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 32 });
  const uint32 = fc.integer({ min: 0, max: 0xffffffff });
  const callData = {
    ced: fc.option(text(40), { nil: undefined }),
    cdpd: fc.option(text(40), { nil: undefined }),
    vars: fc.option(fc.dictionary(fc.integer({ min: 1, max: 10 }).map(String), text(40), { maxKeys: 10 }).map((d) => ({ ...d })), { nil: undefined }),
    ecc: fc.option(fc.dictionary(name, text(100), { minKeys: 1, maxKeys: 5 }).map((d) => ({ ...d })), { nil: undefined }),
    eccArrays: fc.option(
      fc.array(fc.record({ name, index: fc.integer({ min: 0, max: 255 }), value: text(100) }).map((r) => ({ ...r })), { minLength: 1, maxLength: 4 }),
      { nil: undefined }
    ),
  };

  it('property: random QUERY_REQ messages round-trip encode -> decode', () => {
    const queryReq = fc.record({
      invokeId: uint32, routerCallDay: uint32, routerCallKey: uint32, duplicate: fc.boolean(), noScriptReply: fc.boolean(),
      subtype: fc.option(text(60), { nil: undefined }),
      clid: fc.option(text(20), { nil: undefined }),
      routingClient: fc.option(text(30), { nil: undefined }),
      dn: fc.option(text(20), { nil: undefined }),
      ...callData,
    });
    fc.assert(fc.property(queryReq, fc.boolean(), (msg, nul) => {
      const decoded = present(frameOf(serialize.queryReq(msg, { nul }), DIRECTION.ROUTER_TO_HOST));
      const expected = { type: 'QUERY_REQ', typeId: 9, ...present(msg) };
      if (expected.vars && Object.keys(expected.vars).length === 0) delete expected.vars;
      assert.deepEqual(decoded, expected);
    }), { numRuns: 500 });
  });

  it('property: random QUERY_RESP and FAILURE_CONF messages round-trip encode -> decode', () => {
    const queryResp = fc.record({ invokeId: uint32, status: fc.integer({ min: 0, max: 8 }), ...callData }).map((r) => ({ ...r }));
    fc.assert(fc.property(queryResp, (msg) => {
      const decoded = present(frameOf(serialize.queryResp(msg), DIRECTION.HOST_TO_ROUTER));
      const expected = { type: 'QUERY_RESP', typeId: 10, ...present(msg) };
      if (expected.vars && Object.keys(expected.vars).length === 0) delete expected.vars;
      assert.deepEqual(decoded, expected);
    }), { numRuns: 500 });
    fc.assert(fc.property(uint32, fc.integer({ min: 0, max: 8 }), fc.option(text(255), { nil: undefined }), (id, st, error) => {
      const decoded = frameOf(serialize.failureConf(id, st, error), DIRECTION.HOST_TO_ROUTER);
      assert.equal(decoded.invokeId, id);
      assert.equal(decoded.status, st);
      assert.equal(decoded.error, error);
    }), { numRuns: 300 });
  });
});
