'use strict';

// Where the gateway's memory goes, measured on a gateway started as an operator starts it: a
// `ged145 gateway` child process with its defaults (warm-up on, admin port on, default metrics
// on, /metrics scraped every second), only the ports free ones, against a plain node:http backend
// in a process of its own (bench/plain-backend.js: the REST simulator's Express app cost as much
// CPU as the gateway, and on two shared cores the stalls it caused were the machine's, not the
// gateway's). Its RSS is read from /proc 5 s and 20 s after the process was started (the
// warm-up included), then 2,000 queries/s go through the router simulator for 30 s with RSS
// sampled every 200 ms, then it idles for 20 s. The high-water is the highest RSS sampled under
// load; the kernel's VmHWM, which covers the start and the warm-up too, is printed beside it.
//   BENCH_MEMORY_RATE=2000 BENCH_MEMORY_SECONDS=30 BENCH_REPEATS=3 node bench/memory.js
//   BENCH_MEMORY_CONFIGS='{}|{"memory":{"youngGenerationMb":16,"heapGrowthPercent":0}}' node bench/memory.js
//       (gateway configurations compared in one run, '|' apart; {} = as it starts)
//   BENCH_MEMORY_NODE_ARGS='|--max-semi-space-size=1' node bench/memory.js   (Node flags instead)
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js node bench/memory.js   (with BENCH_MEMORY_CONFIGS: the first file for both)
// With BENCH_REPEATS the variants take turns, one row per run.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const {
  start, startGatewayProcess, startPlainBackend, cpuMeter, BIN,
} = require('./harness');
const { execFileSync } = require('node:child_process');
const { Router } = require('../simulator/router');
const { table, writeResult } = require('./report');

const RATE = Number(process.env.BENCH_MEMORY_RATE || 2000);
const SECONDS = Number(process.env.BENCH_MEMORY_SECONDS || 30);
const REPEATS = Number(process.env.BENCH_REPEATS || 1);
const IDLE_MS = 5000;
const SETTLED_MS = 20_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** VmRSS, VmHWM, RssAnon, RssFile of a process, in MiB. */
function status(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)[1]);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024, anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
}

function scrape(port) {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => { res.resume(); res.on('end', resolve); }).on('error', resolve);
  });
}

async function measure({ name, bin, nodeArgs, configFile }, backendUrl) {
  const config = configFile ? ['--config', configFile] : [];
  const started = performance.now();
  const sinceStart = (ms) => sleep(Math.max(0, ms - (performance.now() - started)));
  // Free ports, so that runs beside other services do not collide; every other setting its default.
  const gw = await startGatewayProcess({
    bin, nodeArgs, args: [...config, '--port', '0', '--admin-port', '0', '--backend', backendUrl],
  });
  const startMs = performance.now() - started;
  const { port, adminPort } = gw;
  // An operator's Prometheus scrapes from the start: the allocation it causes is what delayed V8's own memory reducer.
  const scraper = setInterval(() => scrape(adminPort), 1000);
  await sinceStart(IDLE_MS);
  const idle = status(gw.pid);
  await sinceStart(SETTLED_MS);
  const settled = status(gw.pid);
  const router = new Router({
    // HeartbeatLimit out of reach: ten late replies in a row (a neighbour's burst on a shared
    // machine) would close the session and leave the rest of the run unsent; late replies are
    // counted in the errors instead, and the load is offered in full to every build.
    settings: { heartbeatLimit: 1_000_000 },
    targets: [{ host: '127.0.0.1', port }], seed: 1, templates: [{ subtype: 'customer.lookup', clid: '555{rand:1000000-1009999}', dn: '8005551000' }],
  });
  await router.start();
  let rssMax = 0;
  const sampler = setInterval(() => { rssMax = Math.max(rssMax, status(gw.pid).rss); }, 200);
  const meter = cpuMeter(gw.pid);
  await router.runOpenLoop({ rate: RATE, durationMs: SECONDS * 1000 });
  const { cpuPct } = meter();
  clearInterval(sampler);
  const end = status(gw.pid);
  const s = await router.stop();
  await sleep(SETTLED_MS);
  const after = status(gw.pid);
  clearInterval(scraper);
  await gw.stop();
  const errors = Object.values(s.failures).reduce((a, b) => a + b, 0) + s.timeout + s.lost + s.late + Object.values(s.violations).reduce((a, b) => a + b, 0);
  return {
    name, nodeArgs: nodeArgs.join(' '), startMs: Math.round(startMs),
    idleRssMb: idle.rss, settledRssMb: settled.rss, settledAnonMb: settled.anon, settledFileMb: settled.file,
    startHwmMb: idle.hwm, loadRssMaxMb: Math.max(rssMax, end.rss), afterLoadRssMb: after.rss,
    hwmMb: end.hwm, endRssMb: end.rss, answered: s.answered, errors, p99Ms: s.latencyMs.p99, cpuPct,
  };
}

/** Node alone, or Node with the gateway's libraries and nothing else: the floor under the idle RSS. */
async function floor(kind) {
  const p = await start([path.join(__dirname, 'memory-floor.js'), kind], /^(\d+)\n/);
  await sleep(IDLE_MS);
  const idle = status(p.pid);
  await sleep(SETTLED_MS - IDLE_MS);
  const settled = status(p.pid);
  await p.stop();
  return {
    name: kind === 'node' ? 'floor: node alone' : 'floor: libraries only',
    idleRssMb: idle.rss, settledRssMb: settled.rss, settledAnonMb: settled.anon, settledFileMb: settled.file,
  };
}

/** The commit measured, for the figures in docs/performance.md; null outside a git checkout. */
function commitOf() {
  try {
    const options = { cwd: path.join(__dirname, '..'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] };
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], options).trim();
  } catch {
    return null;
  }
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-bench-memory-'));
  const variants = [];
  if (process.env.BENCH_MEMORY_CONFIGS) {
    process.env.BENCH_MEMORY_CONFIGS.split('|').forEach((json, i) => {
      const configFile = path.join(dir, `config-${i}.json`);
      fs.writeFileSync(configFile, json.trim() || '{}');
      variants.push({ name: json.trim() === '{}' || !json.trim() ? 'as started' : json.trim(), bin: BIN, nodeArgs: [], configFile });
    });
  } else {
    for (const v of (process.env.BENCH_MEMORY_NODE_ARGS || '').split('|')) {
      variants.push({ name: v.trim() || 'as started', bin: BIN, nodeArgs: v.split(' ').filter(Boolean) });
    }
  }
  // The older build starts as the first variant does: with its config file when there is one.
  if (process.env.BENCH_BASELINE_BIN) {
    variants.push({
      name: 'baseline', bin: process.env.BENCH_BASELINE_BIN, nodeArgs: [], configFile: variants[0].configFile,
    });
  }
  const backend = await startPlainBackend();
  const rows = [];
  try {
    for (let r = 0; r < REPEATS; r++) for (const v of variants) rows.push(await measure(v, backend.url));
    rows.push(await floor('node'), await floor('libraries'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await backend.stop();
  }
  const headers = [
    'gateway', 'ready ms', 'idle 5 s', 'idle 20 s', 'anon', 'file', 'start HWM', `RSS max at ${RATE}/s`, 'HWM', '20 s after',
    'answered', 'errors', 'p99 ms', 'CPU %',
  ];
  const cells = (r) => [r.startMs, r.idleRssMb, r.settledRssMb, r.settledAnonMb, r.settledFileMb,
    r.startHwmMb, r.loadRssMaxMb, r.hwmMb, r.afterLoadRssMb, r.answered, r.errors, r.p99Ms, r.cpuPct];
  process.stdout.write(table(headers, rows.map((r) => [r.name, ...cells(r).map((v) => (v === undefined ? '-' : v))])));
  const commit = commitOf();
  process.stdout.write(`MiB, from the process's start (anon, file: at 20 s); targets: idle RSS <= 70, RSS max <= 90 under ${RATE}/s for ${SECONDS} s\n`);
  process.stdout.write(`${new Date().toISOString().slice(0, 10)}, ${commit || 'no git'}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  writeResult('memory', { rate: RATE, seconds: SECONDS, commit, loadavg: os.loadavg(), rows });
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
