'use strict';

// What hedging is for, measured end to end: two real origins on 127.0.0.1, the first answering
// one call in five at 280 ms (past the 250 ms deadline) and the rest at once, the second healthy;
// a real gateway process with backend.url the two of them, and 400 known callers at a modest rate
// (100 a second) from a real router connection. Without hedging the slow fifth misses its
// deadline; with backend.hedge {"afterMs": 80} (its defaults otherwise) they are answered by the
// second origin in time. It reads the clock ("in time"), so it is in tests/timing.js.

const assert = require('node:assert/strict');
const { WireClient } = require('../../helpers/wire');
const { tmpDir } = require('../../helpers/tmp');
const { startTestBackend } = require('../../helpers/stack');
const { startGateway } = require('../../helpers/real-backend');

const CALLERS = 400;
const EVERY_MS = 10;
const ANSWER = (name) => JSON.stringify({ vars: { 1: name } });

/** The share of CALLERS answered with the backend's answer (the gateway answers FAILURE_CONF at its deadline otherwise). */
async function inTimeShare(backendUrl, hedge) {
  const config = { backend: { url: backendUrl }, deadlineMs: 250, log: { level: 'warn' } };
  if (hedge !== null) config.backend.hedge = hedge;
  const g = await startGateway(config, { dir: tmpDir('ged145-hedge-') });
  try {
    const client = await WireClient.connect(g.port);
    await client.open();
    for (let i = 1; i <= CALLERS; i++) {
      client.query(i + 1, { clid: `555100${String(i).padStart(4, '0')}` });
      await new Promise((r) => setTimeout(r, EVERY_MS));
    }
    const replies = await client.waitForCount(CALLERS + 1, 10_000); // the OPEN_CONF, then one reply per query
    client.close();
    const answers = replies.filter((m) => m.type === 'QUERY_RESP');
    assert.equal(new Set(replies.slice(1).map((m) => m.invokeId)).size, CALLERS, 'each query answered once');
    const metrics = await g.admin('/metrics');
    return { share: answers.length / CALLERS, metrics: metrics.text };
  } finally {
    await g.stop();
  }
}

describe('hedged requests: a slow fifth of one origin\'s calls answered in time by the other', function () {
  this.timeout(120_000);
  let slow;
  let healthy;

  before(async () => {
    slow = await startTestBackend((req, res) => {
      const late = slow.requests.length % 5 === 0; // every fifth call of its own
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(ANSWER('slow-origin'));
      }, late ? 280 : 0);
    });
    healthy = await startTestBackend((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(ANSWER('healthy-origin'));
    });
  });

  after(async () => {
    await Promise.all([slow.close(), healthy.close()]);
  });

  it('at least 99.5 % in time with backend.hedge {"afterMs": 80}, clearly fewer without', async () => {
    const urls = [slow.url, healthy.url];
    const without = await inTimeShare(urls, null);
    const withHedge = await inTimeShare(urls, { afterMs: 80 });
    const pct = (x) => `${(x * 100).toFixed(2)} %`;
    process.stdout.write(`      in time: ${pct(withHedge.share)} with hedging, ${pct(without.share)} without\n`);
    assert.ok(without.share < 0.95, `without hedging the slow fifth misses its deadline: ${without.share}`);
    assert.ok(withHedge.share >= 0.995, `with hedging: ${withHedge.share}`);
    assert.match(withHedge.metrics, /ged145_backend_hedges_total\{result="won"\} [1-9]\d*/);
    assert.doesNotMatch(without.metrics, /ged145_backend_hedges_total\{/);
  });
});
