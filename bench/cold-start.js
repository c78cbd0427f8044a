'use strict';

// Cold start: per-second p99 and max of the first seconds of 2,000 queries/s against a gateway
// that just started (its warm-up on, then off), after the same against a bare server to warm the
// client. Shows why the gateway warms up before it listens.
//   node bench/cold-start.js
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js BENCH_REPEATS=5 node bench/cold-start.js
//       (this build and the other, warm-up on, take turns; then the medians of their first seconds)

const {
  startBare, startPlainBackend, startGateway, median, BIN,
} = require('./harness');
const { Router } = require('../simulator/router');
const { Timeline } = require('../runner/timeline');
const { table, writeResult } = require('./report');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

async function firstSeconds(port, seconds = 3) {
  // HeartbeatLimit out of reach: ten late replies in a row close a session, and the seconds after
  // it would go unmeasured.
  const router = new Router({ targets: [{ host: '127.0.0.1', port }], seed: 1, settings: { heartbeatLimit: 1_000_000 } });
  await router.start();
  const tl = new Timeline(router).start();
  await router.runOpenLoop({ rate: 2000, durationMs: seconds * 1000 });
  const points = tl.stop();
  await router.stop();
  return points;
}

const BASELINE = process.env.BENCH_BASELINE_BIN || null;
const REPEATS = Number(process.env.BENCH_REPEATS || 1);

async function startedAndLoaded(backendUrl, args, bin) {
  const gw = await startGateway(backendUrl, args, bin);
  try {
    return await firstSeconds(gw.port);
  } finally {
    await gw.stop();
  }
}

async function main() {
  const backend = await startPlainBackend();
  const bare = await startBare();
  await firstSeconds(bare.port, 2); // the client's own JIT, out of the way
  await bare.stop();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-'));
  const noWarmup = path.join(dir, 'no-warmup.json');
  fs.writeFileSync(noWarmup, JSON.stringify({ warmup: false }));
  const runs = [['warm-up on (default)', [], BIN]];
  if (BASELINE) runs.push(['baseline, warm-up on', [], BASELINE]);
  const rows = [];
  try {
    for (let r = 0; r < REPEATS; r++) {
      for (const [label, args, bin] of (r % 2 ? [...runs].reverse() : runs)) rows.push({ label, points: await startedAndLoaded(backend.url, args, bin) });
    }
    rows.push({ label: 'warm-up off', points: await startedAndLoaded(backend.url, ['--config', noWarmup], BIN) });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true }); // a benchmark leaves nothing in /tmp either
  }
  if (REPEATS > 1) {
    for (const [label] of runs) {
      const mine = rows.filter((r) => r.label === label);
      rows.push({
        label: `median: ${label}`,
        points: mine[0].points.map((_, i) => ({ p99: median(mine.map((r) => r.points[i].p99)), max: median(mine.map((r) => r.points[i].max)) })),
      });
    }
  }
  process.stdout.write(table(['gateway just started', ...rows[0].points.map((p, i) => `s${i + 1} p99/max ms`)],
    rows.map((r) => [r.label, ...r.points.map((p) => `${p.p99.toFixed(1)} / ${p.max.toFixed(1)}`)])));
  process.stdout.write(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  writeResult('cold-start', { rows, loadavg: os.loadavg() });
  await backend.stop();
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
