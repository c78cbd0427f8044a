'use strict';

// Does the availability layer (the backend chain: cache, breaker, retry) cost the query path anything when the
// backend is healthy? Queries through three gateways against the same plain backend, in one run:
//   default     cache off, breaker and retry on (what a gateway runs with unless told otherwise)
//   bare        breaker and retry off: the query path without the availability layer's work
//   cache-hit   cache on, every query the same CLID: the path of a fresh cached answer
// Prints rates and p50 at concurrency 1 and 32, and default/bare (1.00 = no cost).
// BENCH_BASELINE_BIN=/path/to/another/checkout/bin/ged145.js adds that build's gateway as a
// fourth row (a previous commit, for a before/after in the same run).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  startGatewayProcess, startPlainBackend, startGateway, runClient, medianRun, REPEATS, SECONDS,
} = require('./harness');
const { table, writeResult } = require('./report');

function configFile(dir, name, settings) {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(settings));
  return file;
}

async function startBaseline(bin, backendUrl) {
  return startGatewayProcess({ bin, args: ['--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', backendUrl, '--log-level', 'info'] });
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-bench-'));
  const plain = await startPlainBackend();
  const variants = [
    ['default', []],
    ['bare', ['--config', configFile(dir, 'bare', { breaker: { enabled: false }, retry: { enabled: false } })]],
    ['cache-hit', ['--config', configFile(dir, 'cache', { cache: { ttlMs: 600_000, key: ['subtype', 'clid'] } })]],
  ];
  const rows = [];
  try {
    const gateways = [];
    for (const [name, args] of variants) gateways.push([name, await startGateway(plain.url, args)]);
    if (process.env.BENCH_BASELINE_BIN) gateways.push(['baseline', await startBaseline(process.env.BENCH_BASELINE_BIN, plain.url)]);
    for (const concurrency of [1, 32]) {
      // Interleaved repeats: each variant sees the same noise on a shared machine.
      const runs = Object.fromEntries(gateways.map(([name]) => [name, []]));
      for (let i = 0; i < REPEATS; i++) {
        for (const [name, gw] of gateways) {
          runs[name].push(await runClient({ port: gw.port, kind: 'query', window: concurrency, durationMs: SECONDS * 1000 }));
        }
      }
      for (const [name] of gateways) {
        const pick = await medianRun(runs[name].length, 'rate', async () => runs[name].shift());
        rows.push({ variant: name, concurrency, ...pick });
      }
    }
    for (const [, gw] of gateways) await gw.stop();
  } finally {
    await plain.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const rateOf = (variant, c) => rows.find((r) => r.variant === variant && r.concurrency === c).rate;
  process.stdout.write(table(['variant', 'conc', 'queries/s', 'p50 ms', 'p99 ms', 'errors', 'vs bare'],
    rows.map((r) => [r.variant, r.concurrency, Math.round(r.rate), r.p50, r.p99, r.errors, r.rate / rateOf('bare', r.concurrency)])));
  writeResult('availability', { repeats: REPEATS, seconds: SECONDS, rows });
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
