'use strict';

// The decision log of a hedged query (backend.hedge): the record names the request whose answer
// the router got, not the last one started. When the hedge wins, the first request ends cut
// ('aborted'); when the first wins after a hedge was sent, the hedge does. A real gateway, two
// real origins on 127.0.0.1, the real decision file.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { WireClient } = require('../../helpers/wire');
const { tmpDir } = require('../../helpers/tmp');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { findCall } = require('../../../tools/why/find');

const DAY = 20_124;
const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** An origin whose answer to each routerCallKey waits delays[key] ms (0 when not listed). */
function origin(name, delays) {
  return startTestBackend((req, res, entry) => {
    const key = JSON.parse(entry.body || '{}').routerCallKey;
    setTimeout(() => {
      if (res.destroyed) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ vars: { 1: name } }));
    }, delays[key] || 0);
  });
}

describe('decision log: a hedged query', function () {
  this.timeout(30_000);
  const cleanup = [];
  after(async () => { for (const f of cleanup.reverse()) await f(); });

  it('names the origin whose answer the router got, with every request counted in attempts', async () => {
    // Call 1: the first origin is slow, the hedge to the second wins. Call 2: a hedge goes (the
    // first answers after 200 ms, past afterMs) but the first still answers before it.
    const a = await origin('a', { 1: 600, 2: 200 });
    const b = await origin('b', { 2: 900 });
    cleanup.push(() => a.close(), () => b.close());
    const file = path.join(tmpDir(), 'decisions.jsonl');
    const stack = await startStack({
      backendUrl: [a.url, b.url],
      gateway: { 'backend.hedge': { afterMs: 80 }, deadlineMs: 1500, 'decisions.file': file },
    });
    cleanup.push(() => stack.stop());
    const c = await WireClient.connect(stack.port);
    cleanup.push(() => c.close());
    await c.open();
    for (const key of [1, 2]) {
      c.query(100 + key, { subtype: 'echo', routerCallDay: DAY, routerCallKey: key });
      const r = await c.waitFor((m) => m.invokeId === 100 + key, 5000);
      assert.deepEqual([r.type, r.vars], ['QUERY_RESP', { 1: key === 1 ? 'b' : 'a' }], `call ${key}`);
    }
    const until = Date.now() + 5000;
    while ((!fs.existsSync(file) || fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length < 2) && Date.now() < until) await wait(20);

    const [won] = (await findCall(file, DAY, 1)).records;
    assert.equal(won.origin, new URL(b.url).origin, JSON.stringify(won));
    assert.notEqual(won.backendResult, 'aborted', JSON.stringify(won));
    assert.equal(won.attempts, 2, 'the first request and the hedge');
    assert.deepEqual(won.reply.fields.vars, { 1: 'b' });

    const [kept] = (await findCall(file, DAY, 2)).records;
    assert.equal(kept.origin, new URL(a.url).origin, JSON.stringify(kept));
    assert.notEqual(kept.backendResult, 'aborted', JSON.stringify(kept));
    assert.equal(kept.attempts, 2);
    assert.deepEqual(kept.reply.fields.vars, { 1: 'a' });
  });
});
