'use strict';

// 5. Workers: closed-loop query throughput through the gateway with --workers 1 and --workers 2
// (node:cluster sharing the port), four router connections at concurrency 16 each.

const { startPlainBackend, startGateway, runClient, medianRun, REPEATS, SECONDS } = require('./harness');
const { table, writeResult } = require('./report');

async function main() {
  const backend = await startPlainBackend();
  const rows = [];
  for (const workers of [1, 2]) {
    const gw = await startGateway(backend.url, ['--workers', String(workers)]);
    const r = await medianRun(REPEATS, 'rate', async () => {
      const parts = await Promise.all(Array.from({ length: 4 }, () => runClient({ port: gw.port, kind: 'query', window: 16, durationMs: SECONDS * 1000 })));
      return {
        rate: parts.reduce((a, p) => a + p.rate, 0), p50: Math.max(...parts.map((p) => p.p50)), p99: Math.max(...parts.map((p) => p.p99)), lost: parts.reduce(
          (a, p) => a + p.lost, 0
        ), duplicated: parts.reduce((a, p) => a + p.duplicated, 0),
      };
    });
    rows.push({ workers, ...r });
    await gw.stop();
  }
  rows[1].ratio = rows[1].rate / rows[0].rate;
  process.stdout.write(table(['workers', 'queries/s', 'p50 ms', 'p99 ms', 'lost', 'dup', 'vs 1 worker'],
    rows.map((r) => [r.workers, Math.round(r.rate), r.p50, r.p99, r.lost, r.duplicated, r.ratio ? r.ratio.toFixed(2) : '1.00'])));
  writeResult('workers', { repeats: REPEATS, seconds: SECONDS, rows });
  await backend.stop();
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
