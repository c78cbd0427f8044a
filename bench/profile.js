'use strict';

// Where a query's CPU goes, in microseconds per query, in the gateway and in the bare proxy
// (bench/bare-proxy.js: the same framing, engine and request, nothing else) side by side: each runs
// under --cpu-prof while a closed-loop client keeps BENCH_WINDOW queries in flight, and only the
// samples of the client's measured seconds are counted (a profile's timestamps are the same
// monotonic clock as process.hrtime). Self time is summed by what the code is: framing, codec,
// session, deadline, backend layers, answer fitting, metrics, channels, the HTTP client, Node's
// sockets, the syscalls under them, garbage collection. Sampling costs CPU of its own, so the
// totals are above what bench/limit.js measures: read the shares, and the differences.
//   node bench/profile.js
//   BENCH_REPEATS=3 BENCH_WINDOW=32 BENCH_SECONDS=10 node bench/profile.js   (medians of the runs)

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  startPlainBackend, startGateway, startBareProxy, runClient, median, BIN,
} = require('./harness');
const { table, writeResult } = require('./report');

const WINDOW = Number(process.env.BENCH_WINDOW || 32);
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const REPEATS = Number(process.env.BENCH_REPEATS || 1);
const WARMUP_MS = 500; // runClient's own: queries in flight before its measured seconds
const INTERVAL_US = 500;

/** What a frame's code is, by its file; a native frame (no file) is its caller's, but under Node's sockets it is the syscall. */
const KINDS = [
  [/\/lib\/protocol\/framer/, 'framing'],
  [/\/lib\/protocol\/|binary_parser/, 'codec (decode, encode)'],
  [/\/gateway\/session\/inflight/, 'deadline'],
  [/\/gateway\/session\//, 'session'],
  [/\/gateway\/backend\/engines\/|bench\/bare-proxy/, 'engine adapter (the bare proxy: its own code)'],
  [/\/gateway\/backend\//, 'backend layers'],
  [/\/gateway\/answer\//, 'answer fitting'],
  [/prom-client|\/gateway\/ops\/(metrics|attach)/, 'metrics'],
  [/diagnostics_channel/, 'channels'],
  [/\/gateway\/ops\//, 'status history and other subscribers'],
  [/undici|\/wasm\//, 'HTTP client (undici, llhttp)'],
  [/node:(net|stream|events|buffer|internal\/(stream|net|buffer))/, 'Node sockets and streams'],
  [/task_queues|timers|perf/, 'promises, ticks, timers, clock'],
];
const SOCKETS = 'Node sockets and streams';

function kindOf(node, parentOf) {
  const { url, functionName } = node.callFrame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(idle)') return null;
  if (functionName === '(program)' || functionName === '(root)') return 'V8 and Node outside JavaScript';
  if (url === '') {
    const up = parentOf.has(node.id) ? kindOf(parentOf.get(node.id), parentOf) : null;
    return up === SOCKETS ? 'syscalls (writev, read) under the sockets' : up;
  }
  const kind = KINDS.find(([re]) => re.test(url));
  return kind === undefined ? 'the rest (admin port, logs)' : kind[1];
}

/** Microseconds of self time by kind in [fromUs, toUs] of a .cpuprofile. */
function selfTimeByKind(file, fromUs, toUs) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map();
  for (const n of profile.nodes) for (const c of n.children || []) parentOf.set(c, n);
  const selfUs = new Map(); // node id -> its samples' time in the window
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (t < fromUs || t > toUs) continue;
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) || 0) + (profile.timeDeltas[i + 1] || 0)); // a sample stands for the time until the next one
  }
  const kinds = {};
  for (const [id, us] of selfUs) {
    const kind = kindOf(byId.get(id), parentOf);
    if (kind !== null) kinds[kind] = (kinds[kind] || 0) + us;
  }
  return kinds;
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** One process under load with its profile: {kind: us per query}, and its rate. */
async function profiled(startProcess) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-profile-'));
  try {
    const p = await startProcess(['--cpu-prof', `--cpu-prof-interval=${INTERVAL_US}`, `--cpu-prof-dir=${dir}`]);
    await runClient({ port: p.port, kind: 'query', window: WINDOW, durationMs: 1000 }); // warm, as bench/limit.js does
    const from = nowUs() + WARMUP_MS * 1000;
    const r = await runClient({
      port: p.port, kind: 'query', window: WINDOW, durationMs: SECONDS * 1000, warmupMs: WARMUP_MS,
    });
    const to = from + SECONDS * 1e6;
    await p.stop(); // the profile is written as the process exits
    const [file] = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error('no profile written: the process did not exit cleanly');
    const queries = r.rate * SECONDS;
    const perQuery = {};
    for (const [kind, us] of Object.entries(selfTimeByKind(path.join(dir, file), from, to))) perQuery[kind] = us / queries;
    return { rate: r.rate, perQuery };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const backend = await startPlainBackend();
  const variants = [
    ['gateway', (nodeArgs) => startGateway(backend.url, [], BIN, nodeArgs)],
    ['bare proxy', (nodeArgs) => startBareProxy(backend.url, nodeArgs)],
  ];
  const runs = Object.fromEntries(variants.map(([name]) => [name, []]));
  for (let i = 0; i < REPEATS; i++) {
    for (const [name, startProcess] of variants) runs[name].push(await profiled(startProcess));
  }
  await backend.stop();

  // Every kind named above has its row, a kind no sample fell in (channels nobody subscribes to) too.
  const kinds = [...new Set([...KINDS.map(([, k]) => k), ...Object.values(runs).flatMap((rs) => rs.flatMap((r) => Object.keys(r.perQuery)))])];
  const med = (name, kind) => median(runs[name].map((r) => r.perQuery[kind] || 0));
  const total = (name) => median(runs[name].map((r) => Object.values(r.perQuery).reduce((a, b) => a + b, 0)));
  kinds.sort((a, b) => med('gateway', b) - med('gateway', a));
  const rows = kinds.map((k) => [k, med('gateway', k), med('bare proxy', k), med('gateway', k) - med('bare proxy', k)]);
  rows.push(['all', total('gateway'), total('bare proxy'), total('gateway') - total('bare proxy')]);
  process.stdout.write(table(['us of CPU per query (self time)', 'gateway', 'bare proxy', 'difference'], rows));
  const rates = (name) => runs[name].map((r) => Math.round(r.rate)).join(' ');
  process.stdout.write(`${WINDOW} in flight, ${SECONDS} s, ${REPEATS} run(s), medians; queries/s under the profiler: gateway ${rates('gateway')}, `
    + `bare proxy ${rates('bare proxy')}; sampled every ${INTERVAL_US} us, which costs CPU of its own\n`);
  writeResult('profile', {
    window: WINDOW, seconds: SECONDS, repeats: REPEATS, runs, medians: Object.fromEntries(rows.map(([k, g, b]) => [k, { gateway: g, bareProxy: b }])),
  });
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
