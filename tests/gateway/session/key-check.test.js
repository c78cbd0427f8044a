'use strict';

// The wrong-key test of an encrypted session (gateway/session/key-check.js), over the real codec:
// queries a router encrypts with its session key, read by a host whose private key differs (so
// its session key differs too). None may pass for a readable query once the session is known to
// be wrong, and with the right key no query is refused.

const assert = require('node:assert/strict');
const {
  des, decodeFrame, serialize, DIRECTION,
} = require('../../../lib/protocol');
const { KeyCheck } = require('../../../gateway/session/key-check');
const { prng } = require('../../../lib/prng');

/** The nth query of a call flow, encrypted under the router's session key. */
const queryOf = (n, cipher) => serialize.queryReq({
  invokeId: n, routerCallDay: 1, routerCallKey: n, subtype: 'cust', clid: `555${1000 + n}`, vars: { 1: `acct-${n}`, 2: 'gold' },
}, { nul: true, cipher });

function keyOf(rnd) {
  const k = Buffer.alloc(8);
  for (let i = 0; i < 8; i++) k[i] = Math.floor(rnd() * 256);
  return k;
}

/** A session of `queries` queries: the verdict on each, read with hostKey, written with routerKey. */
function session(routerKey, hostKey, queries) {
  const router = des.createSessionCipher(routerKey);
  const check = new KeyCheck();
  const host = des.createSessionCipher(hostKey, check.hooks());
  const out = [];
  for (let n = 1; n <= queries; n++) {
    const q = decodeFrame(queryOf(n, router), { direction: DIRECTION.ROUTER_TO_HOST, cipher: host });
    out.push({ ...check.judge(q), refuses: check.refuses(q), subtype: q.subtype });
  }
  return out;
}

describe('KeyCheck: a router with another DES key', () => {
  it('2,000 sessions with a wrong key: the first query refused in all but a handful, every query after the key is found wrong refused', () => {
    const rnd = prng(43);
    let firstRefused = 0;
    let readableAfterWrong = 0;
    const sessions = 2000;
    for (let i = 0; i < sessions; i++) {
      const verdicts = session(keyOf(rnd), keyOf(rnd), 6);
      if (verdicts[0].refused) firstRefused++;
      const found = verdicts.findIndex((v) => v.wrongKeyNow);
      assert.ok(found >= 0 && found <= 1, `session ${i}: the key found wrong by the second query (${found})`);
      for (const v of verdicts.slice(found)) if (!v.refused || !v.refuses) readableAfterWrong++;
    }
    assert.ok(firstRefused >= sessions - 2, `${firstRefused} of ${sessions} first queries refused`);
    assert.equal(readableAfterWrong, 0);
  });

  it('the right key: 500 sessions, no query refused, every field read', () => {
    const rnd = prng(7);
    for (let i = 0; i < 500; i++) {
      const k = keyOf(rnd);
      for (const v of session(k, k, 4)) {
        assert.deepEqual([v.refused, v.wrongKeyNow, v.dropped, v.subtype], [false, false, [], 'cust']);
      }
    }
  });
});
