'use strict';

// 1. Bare limit: heartbeat round trips against a 30-line server with the same framing, and
// against the gateway, with the same client: sequential and 32 deep. Reports gateway/bare.

const { startBare, startPlainBackend, startGateway, runClient, medianRun, REPEATS, SECONDS } = require('./harness');
const { table, writeResult } = require('./report');

async function main() {
  const bare = await startBare();
  const backend = await startPlainBackend();
  const gw = await startGateway(backend.url);
  const rows = [];
  for (const window of [1, 32]) {
    const b = await medianRun(REPEATS, 'rate', () => runClient({ port: bare.port, kind: 'heartbeat', window, durationMs: SECONDS * 1000 }));
    const g = await medianRun(REPEATS, 'rate', () => runClient({ port: gw.port, kind: 'heartbeat', window, durationMs: SECONDS * 1000 }));
    rows.push({ window, bare: b, gateway: g, ratio: g.rate / b.rate });
  }
  process.stdout.write(table(['heartbeats', 'bare/s', 'gateway/s', 'gateway/bare', 'bare p50 ms', 'gateway p50 ms', 'target'],
    rows.map((r) => [
      r.window === 1 ? 'sequential' : `${r.window} deep`, Math.round(r.bare.rate), Math.round(r.gateway.rate), r.ratio, r.bare.p50, r.gateway.p50,
      r.window === 32 ? '>= 0.60' : '-',
    ])));
  writeResult('bare', { repeats: REPEATS, seconds: SECONDS, rows });
  await Promise.all([bare.stop(), gw.stop(), backend.stop()]);
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
