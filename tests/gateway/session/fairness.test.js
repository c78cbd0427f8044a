'use strict';

// One router session's burst must not take the backend's connections from another session: side
// A sends bursts of 3,000 queries to a 50 ms backend (far more than 64 connections answer within
// the deadline), side B a steady 100 queries/s, and B's queries keep their latency. A real gateway
// process, two real router connections, a real HTTP backend.

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { WireClient } = require('../../helpers/wire');
const { startTestBackend } = require('../../helpers/stack');
const { startGateway, burst, rateRun } = require('../../helpers/real-backend');
const { tmpDir } = require('../../helpers/tmp');

describe('fair sessions', function () {
  this.timeout(60_000);

  it('side B at 100 queries/s is answered in time, all of it, while side A bursts 3 x 3,000 queries at a 50 ms backend', async () => {
    const backend = await startTestBackend((req, res) => setTimeout(() => res.end('{"vars": {"1": "ok"}}'), 50));
    const g = await startGateway({ backend: { url: backend.url } }, { dir: tmpDir() });
    const a = await WireClient.connect(g.port);
    const b = await WireClient.connect(g.port);
    try {
      await a.open({ config: 'side-A' });
      await b.open({ config: 'side-B' });
      const started = performance.now();
      const bursts = (async () => {
        for (let i = 0; i < 3; i++) {
          await burst(a, { first: 10 + i * 3000, n: 3000, subtype: 'slow', clidOf: (id) => String(id) });
        }
      })();
      const steady = await rateRun(b, { first: 10, rate: 100, durationMs: 3000, subtype: 'steady', clidOf: (id) => String(id) });
      await bursts;
      const latencies = steady.map((r) => r.latencyMs).sort((x, y) => x - y);
      const p99 = latencies[Math.floor(latencies.length * 0.99)];
      process.stdout.write(`      side B: ${steady.length} queries, p99 ${Math.round(p99)} ms, max ${Math.round(latencies.at(-1))} ms; `
        + `side A answered ok ${a.messages.filter((m) => m.type === 'QUERY_RESP').length} of 9,000 (${Math.round(performance.now() - started)} ms)\n`);
      const failed = steady.filter((r) => r.reply.type !== 'QUERY_RESP');
      assert.deepEqual(failed.map((r) => [r.id, r.reply.status]), [], 'every one of side B\'s queries answered');
      assert.ok(latencies.at(-1) < 300, `none late: max ${latencies.at(-1)} ms`);
    } finally {
      a.close();
      b.close();
      await g.stop();
      await backend.close();
    }
  });
});
