'use strict';

// Two builds of the gateway on the same backend, interleaved: queries at one window (1 =
// sequential) for BENCH_SECONDS each, BENCH_ROUNDS rounds. Each round starts both gateways afresh
// (where the scheduler puts a process stays with it), and the builds take turns to start and to go
// first. Prints each round and the median of the per-round rate ratios (this build / baseline),
// and the gateway process's CPU per query (/proc, scrapes included) with the median of its
// per-round ratios: on a noisy 2-core machine the rate moves with what the neighbours do, the CPU a
// query costs the gateway much less.
// Quicker than bench/limit.js when one change is judged on one path, but mind its noise: two
// copies of one build gave median ratios from 0.98 to 1.10 over 12 rounds (six runs,
// docs/performance.md), so a change smaller than that needs more rounds, or other evidence.
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js node bench/ab.js
//   BENCH_ROUNDS=16 BENCH_WINDOW=32 BENCH_SECONDS=2 BENCH_BASELINE_BIN=... node bench/ab.js
//   BENCH_GATEWAY_ARGS='--config a.json' BENCH_BASELINE_ARGS='--config b.json' BENCH_BASELINE_BIN=bin/ged145.js node bench/ab.js
//       (one build, two configurations)
// BENCH_PREWARM_SECONDS (1): unmeasured queries through each gateway after it starts, at the same
// window, so that neither build is measured while V8 still compiles its path (the warm-up at
// start covers most of it, but a build with a different warm-up would be favoured otherwise).
// BENCH_SCRAPE_MS (1000): while a build is measured, GET its /metrics (admin port) at once and then
// every this many ms, reading each body whole, as a Prometheus would that scrapes this often (a
// short interval on purpose: what a scrape costs shows in the rate). 0 turns it off. The scrapes
// per build are printed; a failed scrape stops the run.

const {
  startPlainBackend, startGateway, runClient, cpuMeter, median,
} = require('./harness');
const { table, writeResult } = require('./report');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 12);
const WINDOW = Number(process.env.BENCH_WINDOW || 1);
const SECONDS = Number(process.env.BENCH_SECONDS || 2);
const PREWARM = Number(process.env.BENCH_PREWARM_SECONDS || 1);
const SCRAPE_MS = Number(process.env.BENCH_SCRAPE_MS ?? 1000);
const args = (s) => (s || '').split(' ').filter(Boolean);

/** Scrapes http://127.0.0.1:<adminPort>/metrics every SCRAPE_MS until the returned stop() (which waits for the last scrape). */
function scrapeMetrics(adminPort) {
  if (!(SCRAPE_MS > 0)) return async () => ({ scrapes: 0, bytes: 0 });
  const url = `http://127.0.0.1:${adminPort}/metrics`;
  let scrapes = 0;
  let bytes = 0;
  let failure = null;
  let inflight = Promise.resolve();
  const scrape = () => {
    inflight = inflight.then(async () => {
      const res = await fetch(url);
      const body = await res.text();
      if (res.status !== 200 || !body.includes('# TYPE')) throw new Error(`${url}: HTTP ${res.status}, ${body.length} bytes`);
      scrapes++;
      bytes += body.length;
    }).catch((e) => { failure ||= e; });
  };
  scrape();
  const timer = setInterval(scrape, SCRAPE_MS);
  return async () => {
    clearInterval(timer);
    await inflight;
    if (failure) throw failure;
    return { scrapes, bytes };
  };
}

async function main() {
  if (!process.env.BENCH_BASELINE_BIN) throw new Error('set BENCH_BASELINE_BIN to the baseline build\'s bin/ged145.js');
  const backend = await startPlainBackend();
  const build = (name, start) => ({
    name, start, rates: [], cpuUs: [], scrapes: 0,
  });
  const builds = [
    build('this build', () => startGateway(backend.url, args(process.env.BENCH_GATEWAY_ARGS))),
    build('baseline', () => startGateway(backend.url, args(process.env.BENCH_BASELINE_ARGS), process.env.BENCH_BASELINE_BIN)),
  ];
  const rows = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? builds : [...builds].reverse();
    for (const b of order) b.gw = await b.start();
    if (PREWARM > 0) for (const b of order) await runClient({ port: b.gw.port, kind: 'query', window: WINDOW, durationMs: PREWARM * 1000 });
    for (const b of order) {
      const stopScraping = scrapeMetrics(b.gw.adminPort);
      const meter = cpuMeter(b.gw.pid);
      const r = await runClient({ port: b.gw.port, kind: 'query', window: WINDOW, durationMs: SECONDS * 1000 });
      b.cpuUs.push(((meter().cpuPct / 100) * 1e6) / r.rate); // CPU seconds per second / queries per second
      b.scrapes += (await stopScraping()).scrapes;
      if (r.errors || r.lost || r.duplicated) throw new Error(`${b.name}: ${r.errors} errors, ${r.lost} lost, ${r.duplicated} duplicated`);
      b.rates.push(r.rate);
    }
    await Promise.all(builds.map((b) => b.gw.stop()));
    const [a, z] = builds;
    rows.push([i + 1, Math.round(a.rates[i]), Math.round(z.rates[i]), a.rates[i] / z.rates[i], a.cpuUs[i], z.cpuUs[i], a.cpuUs[i] / z.cpuUs[i]]);
  }
  await backend.stop();
  const ratio = median(rows.map((r) => r[3]));
  const cpuRatio = median(rows.map((r) => r[6]));
  const [ours, theirs] = builds.map((b) => Math.round(median(b.rates)));
  const [ourCpu, theirCpu] = builds.map((b) => median(b.cpuUs).toFixed(1));
  process.stdout.write(table(['round', 'this build/s', 'baseline/s', 'ratio', 'this us/query', 'baseline us/query', 'CPU ratio'],
    rows.map((r) => [...r.slice(0, 4), r[4].toFixed(1), r[5].toFixed(1), r[6]])));
  process.stdout.write(`window ${WINDOW}, ${ROUNDS} rounds of ${SECONDS} s: median ${ours} vs ${theirs}/s, median ratio ${ratio.toFixed(3)}\n`);
  process.stdout.write(`gateway CPU per query: median ${ourCpu} vs ${theirCpu} us, median ratio ${cpuRatio.toFixed(3)} (below 1: this build is cheaper)\n`);
  const scraped = SCRAPE_MS > 0 ? `every ${SCRAPE_MS} ms: ${builds.map((b) => `${b.scrapes} of ${b.name}`).join(', ')}` : 'off (BENCH_SCRAPE_MS=0)';
  process.stdout.write(`/metrics scraped during the measured runs ${scraped}\n`);
  writeResult('ab', {
    window: WINDOW, rounds: ROUNDS, seconds: SECONDS, scrapeMs: SCRAPE_MS,
    rates: builds.map((b) => ({
      name: b.name, rates: b.rates, cpuUsPerQuery: b.cpuUs, scrapes: b.scrapes,
    })),
    ratio,
    cpuRatio,
  });
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
