'use strict';

// Cold start: per-second p99 and max of the first seconds of 2,000 queries/s against a gateway
// that just started (its warm-up on, then off), after the same against a bare server to warm the
// client. Shows why the gateway warms up before it listens.

const { startBare, startPlainBackend, startGateway } = require('./harness');
const { Router } = require('../simulator/router');
const { Timeline } = require('../runner/timeline');
const { table, writeResult } = require('./report');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

async function firstSeconds(port, seconds = 3) {
  const router = new Router({ targets: [{ host: '127.0.0.1', port }], seed: 1 });
  await router.start();
  const tl = new Timeline(router).start();
  await router.runOpenLoop({ rate: 2000, durationMs: seconds * 1000 });
  const points = tl.stop();
  await router.stop();
  return points;
}

async function main() {
  const backend = await startPlainBackend();
  const bare = await startBare();
  await firstSeconds(bare.port, 2); // the client's own JIT, out of the way
  await bare.stop();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-'));
  const noWarmup = path.join(dir, 'no-warmup.json');
  fs.writeFileSync(noWarmup, JSON.stringify({ warmup: false }));
  const rows = [];
  try {
    for (const [label, args] of [['warm-up on (default)', []], ['warm-up off', ['--config', noWarmup]]]) {
      const gw = await startGateway(backend.url, args);
      const points = await firstSeconds(gw.port);
      rows.push({ label, points });
      await gw.stop();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true }); // a benchmark leaves nothing in /tmp either
  }
  process.stdout.write(table(['gateway just started', ...rows[0].points.map((p, i) => `s${i + 1} p99/max ms`)],
    rows.map((r) => [r.label, ...r.points.map((p) => `${p.p99.toFixed(1)} / ${p.max.toFixed(1)}`)])));
  writeResult('cold-start', { rows });
  await backend.stop();
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
