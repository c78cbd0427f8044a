'use strict';

// The query path against its physical limit (issue 18), in one run with the variants interleaved
// so that each repeat sees the same noise:
//   sequential: limit = bare framed round trip (the same QUERY_REQ to a server that does no work)
//               + direct HTTP round trip (the gateway's engine, same request, same backend);
//               ratio = limit time / gateway time (1.00 = the gateway adds nothing of its own).
//   concurrency 32: gateway queries/s / direct HTTP queries/s.
// Each ratio is the median of the per-repeat ratios.
//   BENCH_REPEATS=5 BENCH_SECONDS=3 BENCH_ENGINES=undici,axios node bench/limit.js

const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const {
  startBare, startPlainBackend, startGateway, runClient, cpuMeter, median, REPEATS, SECONDS,
} = require('./harness');
const { table, writeResult } = require('./report');

const run = promisify(execFile);

async function direct(engine, url, concurrency) {
  const { stdout } = await run(process.execPath, [path.join(__dirname, 'direct-http.js'), engine, url, String(concurrency), String(SECONDS)]);
  return JSON.parse(stdout);
}

async function main() {
  const engines = (process.env.BENCH_ENGINES || 'undici').split(',');
  const bare = await startBare();
  const backend = await startPlainBackend();
  const rows = [];
  for (const engine of engines) {
    const gw = await startGateway(backend.url, ['--engine', engine]);
    const query = (port, window) => runClient({ port, kind: 'query', window, durationMs: SECONDS * 1000 });
    const repeats = [];
    for (let i = 0; i < REPEATS; i++) {
      const b = await query(bare.port, 1);
      const d1 = await direct(engine, backend.url, 1);
      const meter = cpuMeter(gw.pid);
      const g1 = await query(gw.port, 1);
      const cpu1 = meter();
      const d32 = await direct(engine, backend.url, 32);
      const g32 = await query(gw.port, 32);
      const limitMs = 1000 / b.rate + 1000 / d1.rate;
      repeats.push({
        bare: b.rate, direct1: d1.rate, gateway1: g1.rate, limitMs, gatewayMs: 1000 / g1.rate, seqRatio: limitMs / (1000 / g1.rate),
        gatewayUsPerQuery: (cpu1.cpuPct * 10_000) / g1.rate, direct32: d32.rate, gateway32: g32.rate, c32Ratio: g32.rate / d32.rate,
        errors: g1.errors + g32.errors + d1.errors + d32.errors, lost: g1.lost + g32.lost, duplicated: g1.duplicated + g32.duplicated,
      });
    }
    await gw.stop();
    const m = (key) => median(repeats.map((r) => r[key]));
    rows.push({
      engine, bare: m('bare'), direct1: m('direct1'), gateway1: m('gateway1'), limitMs: m('limitMs'), gatewayMs: m('gatewayMs'), seqRatio: m('seqRatio'),
      seqRatios: repeats.map((r) => r.seqRatio), gatewayUsPerQuery: m('gatewayUsPerQuery'), direct32: m('direct32'), gateway32: m('gateway32'),
      c32Ratio: m('c32Ratio'), c32Ratios: repeats.map((r) => r.c32Ratio), errors: repeats.reduce((a, r) => a + r.errors, 0),
      lost: repeats.reduce((a, r) => a + r.lost, 0), duplicated: repeats.reduce((a, r) => a + r.duplicated, 0),
    });
  }
  const list = (xs) => xs.map((x) => x.toFixed(2)).join(' ');
  process.stdout.write(table(['engine', 'bare/s', 'direct/s', 'gateway/s', 'limit ms', 'gateway ms', 'seq ratio', 'gw CPU us/q', 'runs'],
    rows.map((r) => [r.engine, Math.round(r.bare), Math.round(r.direct1), Math.round(r.gateway1), r.limitMs * 1, r.gatewayMs * 1, r.seqRatio,
      Math.round(r.gatewayUsPerQuery), list(r.seqRatios)])));
  process.stdout.write('\n');
  process.stdout.write(table(['engine', 'direct c32/s', 'gateway c32/s', 'c32 ratio', 'runs', 'errors', 'lost', 'dup'],
    rows.map((r) => [r.engine, Math.round(r.direct32), Math.round(r.gateway32), r.c32Ratio, list(r.c32Ratios), r.errors, r.lost, r.duplicated])));
  process.stdout.write('targets: seq ratio >= 0.85, c32 ratio >= 0.85\n');
  writeResult('limit', { repeats: REPEATS, seconds: SECONDS, rows });
  await Promise.all([bare.stop(), backend.stop()]);
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
