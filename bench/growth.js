'use strict';

// How cost grows with the work: p50/p99 latency and gateway CPU per query at a fixed offered
// rate, as router sessions (1, 8, 64), ECC entries per answer (0, 10, 100) and gateway workers
// (1, 2) grow. Open loop through router simulators in this process, a plain backend in another,
// the gateway (and its workers) in a third; CPU is summed over the gateway's process tree.
// BENCH_GROWTH_RATE (1000 queries/s), BENCH_GROWTH_SECONDS (5). Writes bench/results/growth.json.

const fs = require('node:fs');
const { start, startGateway, REPEATS } = require('./harness');
const { Router } = require('../simulator/router');
const { readProc } = require('../runner/monitor');
const { table, writeResult } = require('./report');

const RATE = Number(process.env.BENCH_GROWTH_RATE || 1000);
const SECONDS = Number(process.env.BENCH_GROWTH_SECONDS || 5);

/** The pid and every descendant's pid. */
function tree(pid) {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let kids = '';
    try {
      kids = fs.readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'utf8');
    } catch {
      // gone
    }
    out.push(...kids.split(' ').filter(Boolean).map(Number));
  }
  return out;
}

const ticksOf = (pid) => tree(pid).reduce((n, p) => {
  try {
    return n + readProc(p).ticks;
  } catch {
    return n;
  }
}, 0);

async function measure({ port, sessions, gatewayPid }) {
  const routers = Array.from({ length: sessions }, (_, i) => new Router({
    targets: [{ host: '127.0.0.1', port }], seed: i + 1, templates: [{ subtype: 'q', clid: '555{seq}' }],
  }));
  await Promise.all(routers.map((r) => r.start()));
  const t0 = ticksOf(gatewayPid);
  const started = Date.now();
  await Promise.all(routers.map((r) => r.runOpenLoop({ rate: RATE / sessions, durationMs: SECONDS * 1000 })));
  const cpuSeconds = (ticksOf(gatewayPid) - t0) / 100;
  const elapsed = (Date.now() - started) / 1000;
  const summaries = await Promise.all(routers.map((r) => r.stop()));
  const answered = summaries.reduce((n, s) => n + s.answered, 0);
  const errors = summaries.reduce((n, s) => n + s.sent - s.ok, 0);
  // The session with the worst p99 stands for the run (each router has its own histogram).
  const p50 = Math.max(...summaries.map((s) => s.latencyMs.p50));
  const p99 = Math.max(...summaries.map((s) => s.latencyMs.p99));
  return {
    answered, errors, p50, p99, cpuPct: (cpuSeconds / elapsed) * 100, cpuUsPerQuery: answered ? (cpuSeconds * 1e6) / answered : null,
  };
}

async function main() {
  const rows = [];
  for (const ecc of [0, 10, 100]) {
    const backend = await start([require.resolve('./plain-backend')], /^(\d+)\n/, { env: { BENCH_ECC_ENTRIES: String(ecc) } });
    const url = `http://127.0.0.1:${backend.match[1]}`;
    for (const workers of [1, 2]) {
      const gw = await startGateway(url, workers > 1 ? ['--workers', String(workers)] : []);
      await measure({ port: gw.port, sessions: 8, gatewayPid: gw.pid }); // discarded: the first seconds of a process cost more
      for (const sessions of [1, 8, 64]) {
        const runs = [];
        for (let i = 0; i < REPEATS; i++) runs.push(await measure({ port: gw.port, sessions, gatewayPid: gw.pid }));
        runs.sort((a, b) => a.p99 - b.p99);
        rows.push({ ecc, workers, sessions, ...runs[Math.floor(runs.length / 2)] });
      }
      await gw.stop();
    }
    await backend.stop();
  }
  process.stdout.write(`offered ${RATE} queries/s for ${SECONDS} s per run, median of ${REPEATS} by p99\n`);
  process.stdout.write(table(['ecc', 'workers', 'sessions', 'answered', 'errors', 'p50 ms', 'p99 ms', 'gateway CPU %', 'CPU us/query'],
    rows.map((r) => [r.ecc, r.workers, r.sessions, r.answered, r.errors, r.p50, r.p99, r.cpuPct, r.cpuUsPerQuery])));
  writeResult('growth', { rate: RATE, seconds: SECONDS, repeats: REPEATS, rows });
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
