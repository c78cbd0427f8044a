'use strict';

// Where a sequential query's time goes on the gateway's side of the round trip, step by step, in
// the gateway and in the bare proxy (bench/bare-proxy.js: the same framing, engine and request,
// nothing else). bench/limit.js says how far the gateway is from the composed limit with one query
// in flight; this says which steps make the distance. With one query in flight every step is on
// the router's path: nothing overlaps it. Each process runs bench/critical-path-probe.js
// (--require), which stamps a query as it passes each step and writes the medians when it exits;
// a first connection warms each process up, the probe counts the second (the last) only; the
// variants take turns, and each figure is the median of the runs' medians, in microseconds.
//
// The bare proxy also runs with --liftoff-only, the V8 flag the gateway sets itself (lib/heap.js,
// for its memory): undici's HTTP parser then runs as V8's baseline compiler left it. That column
// tells how much of the gateway's "answer parsed" step is the flag, not the gateway's own code.
//
// A second table follows the whole round trip from process to process (bench/hops.js), in runs of
// its own (the step stamps' own work would count in it): the router's write to its bytes in the
// middle, the middle's side, its request to the backend having it, and so on back to the router's
// next write, each hop's median and mean. On a machine whose processes share cores the hand-offs
// between processes are most of a round trip; the run-by-run lines show how they move.
//   node bench/critical-path.js
//   BENCH_REPEATS=5 BENCH_SECONDS=3 node bench/critical-path.js
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js node bench/critical-path.js   (a second build, interleaved)
//   BENCH_TAILS=1 node bench/critical-path.js   (also each write to the loop's next turn)

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  startPlainBackend, startGateway, startBareProxy, runClient, median, REPEATS, SECONDS, GATEWAY_NODE_ARGS,
} = require('./harness');
const { table, writeResult } = require('./report');
const { HOPS, MOMENT, Moments, hopTimes } = require('./hops');

const PROBE = path.join(__dirname, 'critical-path-probe.js');
const HOPS_MIDDLE = path.join(__dirname, 'hops-middle.js');
const HOPS_BACKEND = path.join(__dirname, 'hops-backend.js');
/** Each hop's key in the figures: "from>to". */
const HOP_KEYS = HOPS.map(([from, to]) => `${from}>${to}`);

/** [gap key, what the step is]: the rows, in the order a query passes them. */
const STEPS = [
  ['in>dispatched', 'framing, decode, session checks'],
  ['dispatched>started', 'in flight: deadline, query channel, handle'],
  ['started>engine', 'backend layers down, request built'],
  ['in>engine', 'router bytes in -> engine called'],
  ['engine>request written', 'HTTP client: request to the socket'],
  ['in>request written', 'router bytes in -> request written'],
  ['answer in>answer parsed', 'HTTP client: answer parsed'],
  ['answer parsed>outcome', 'backend layers up, answer classified'],
  ['outcome>reply built', 'answer fitted, reply encoded'],
  ['reply built>reply written', 'reply to the socket'],
  ['answer parsed>reply written', 'answer parsed -> reply written'],
  ['answer in>reply written', 'backend bytes in -> reply written'],
];
/** With BENCH_TAILS=1: each write's syscall and the work after it, to the loop's next turn (these and the round trip then include the probe's setImmediate). */
const TAILS = process.env.BENCH_TAILS === '1';
if (TAILS) {
  STEPS.push(
    ['request written>loop turned', 'request write -> setImmediate'],
    ['reply written>loop turned', 'reply write -> setImmediate'],
  );
}

/** Starts one variant with a probe (--require) in its process, env its variables: {port, child, stop}. */
async function startVariant(variant, backendUrl, probe, env) {
  const preload = ['--require', probe];
  if (variant.bin === undefined) return startBareProxy(backendUrl, [...variant.nodeArgs, ...preload], env);
  return startGateway(backendUrl, [], variant.bin, [...GATEWAY_NODE_ARGS, ...preload], env);
}

/**
 * One run of one variant against a backend of its own: a first connection warms the process up,
 * the second is measured (observe: told of its writes and reads). env: more variables for the
 * variant's process, backend: {nodeArgs, env} for the backend's. After: its stderr, its rate.
 */
async function runVariant(variant, probe, { env = {}, backend: own = {}, observe = null } = {}) {
  const backend = await startPlainBackend(own.nodeArgs, own.env);
  // The probe finds the gateway's modules below the checkout it runs from.
  const probeEnv = { CRITICAL_PATH_ROOT: variant.root, CRITICAL_PATH_TAILS: TAILS ? '1' : '0', ...env };
  let p;
  let r;
  let err = '';
  try {
    p = await startVariant(variant, backend.url, probe, probeEnv);
    p.child.stderr.on('data', (c) => { err += c; });
    await runClient({ port: p.port, kind: 'query', window: 1, durationMs: 1000 });
    r = await runClient({
      port: p.port, kind: 'query', window: 1, durationMs: SECONDS * 1000, observe,
    });
  } finally {
    // The probes write what they noted as their processes exit.
    if (p !== undefined) await p.stop();
    await backend.stop();
  }
  return { err, rate: r.rate };
}

const tail = (err) => (err ? `: ${err.slice(-500)}` : '');

/** A run of the step table: the probe's medians by gap key, and the client's rate. */
async function stepRun(variant, label) {
  const { err, rate } = await runVariant(variant, PROBE);
  const line = /^critical-path (.*)$/m.exec(err);
  if (line === null) throw new Error(`${label}: the probe wrote no figures${tail(err)}`);
  return { ...JSON.parse(line[1]), rate };
}

/**
 * A run of the hop table: each hop's median and mean, their sums (the means' is the mean round
 * trip of those followed), the round trips followed, and the client's rate.
 */
async function hopRun(variant, label, dir) {
  const stem = label.replace(/\W+/g, '-');
  const files = { middle: path.join(dir, `${stem}.middle.json`), backend: path.join(dir, `${stem}.backend.json`) };
  const router = new Moments();
  const { err, rate } = await runVariant(variant, HOPS_MIDDLE, {
    env: { CRITICAL_PATH_HOPS_FILE: files.middle },
    backend: { nodeArgs: ['--require', HOPS_BACKEND], env: { CRITICAL_PATH_HOPS_FILE: files.backend } },
    observe: { sent: () => router.add(MOMENT['router write']), received: () => router.add(MOMENT['router bytes in']) },
  });
  const read = (file) => {
    if (!fs.existsSync(file)) throw new Error(`${label}: ${path.basename(file)} was not written: the process did not exit on its own${tail(err)}`);
    const moments = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.rmSync(file);
    return moments;
  };
  const times = hopTimes(router.toJSON(), read(files.middle), read(files.backend));
  if (times.some((xs) => xs.length === 0)) throw new Error(`${label}: no round trip could be followed from process to process${tail(err)}`);
  const mean = (xs) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
  const byHop = (figure) => Object.fromEntries(HOP_KEYS.map((key, h) => [key, figure(times[h])]));
  const medians = byHop(median);
  const means = byHop(mean);
  const sum = (figures) => Object.values(figures).reduce((total, x) => total + x, 0);
  return {
    rate, counted: times[0].length, medians, means, sums: { medians: sum(medians), means: sum(means) },
  };
}

async function main() {
  const here = path.join(__dirname, '..');
  const variants = [{ name: 'gateway', bin: path.join(here, 'bin', 'ged145.js'), root: here }];
  if (process.env.BENCH_BASELINE_BIN) {
    const bin = path.resolve(process.env.BENCH_BASELINE_BIN);
    variants.push({ name: 'baseline', bin, root: path.join(path.dirname(bin), '..') });
  }
  variants.push({
    name: 'bare proxy', nodeArgs: [], root: here,
  }, {
    name: 'bare proxy, --liftoff-only', nodeArgs: ['--liftoff-only'], root: here,
  });
  // The processes' moments for the hops go through files in a directory of the bench's own.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-critical-path-'));
  const runs = new Map(variants.map((v) => [v, []]));
  const hopRuns = new Map(variants.map((v) => [v, []]));
  try {
    for (let i = 0; i < REPEATS; i++) {
      // Variants take turns going first, so that none always meets the machine in the same state.
      const order = i % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        const label = `${v.name} run ${i + 1}`;
        runs.get(v).push(await stepRun(v, label));
        hopRuns.get(v).push(await hopRun(v, label, dir));
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const fig = (v, key) => {
    const xs = runs.get(v).map((r) => r.medians[key]).filter((x) => x !== undefined);
    return xs.length === 0 ? null : median(xs);
  };
  const us = (x) => (x === null ? '-' : x.toFixed(2));
  const rows = STEPS.map(([key, what]) => [what, ...variants.map((v) => us(fig(v, key)))]);
  const roundTrip = (v) => median(runs.get(v).map((r) => 1e6 / r.rate));
  const ours = (v) => {
    const a = fig(v, 'in>request written');
    const b = fig(v, 'answer in>reply written');
    return a === null || b === null ? null : a + b;
  };
  rows.push(['the two together', ...variants.map((v) => us(ours(v)))]);
  rows.push(['round trip at the router (1 / rate)', ...variants.map((v) => us(roundTrip(v)))]);
  process.stdout.write(`one query in flight, us, median of ${REPEATS} runs of ${SECONDS} s\n`);
  process.stdout.write(table(['step', ...variants.map((v) => v.name)], rows));

  // The whole round trip, hop by hop between the processes; "the middle" is the gateway or the bare proxy.
  const hop = (v, key, kind) => median(hopRuns.get(v).map((r) => r[kind][key]));
  const both = (v, key) => [us(hop(v, key, 'medians')), us(hop(v, key, 'means'))];
  const hopRows = HOPS.map(([, , what], h) => [what, ...variants.flatMap((v) => both(v, HOP_KEYS[h]))]);
  // Each run's hops added up, then the median of the runs: a sum of medians taken run by run would mix runs.
  const together = (v, kind) => us(median(hopRuns.get(v).map((r) => r.sums[kind])));
  hopRows.push(['the hops together', ...variants.flatMap((v) => [together(v, 'medians'), together(v, 'means')])]);
  hopRows.push(['round trip at the router (1 / rate)', ...variants.flatMap((v) => ['', us(median(hopRuns.get(v).map((r) => 1e6 / r.rate)))])]);
  hopRows.push(['round trips followed', ...variants.flatMap((v) => ['', String(median(hopRuns.get(v).map((r) => r.counted)))])]);
  process.stdout.write(`\nthe round trip between the processes, hop by hop, us: each run's medians and means, median of ${REPEATS} runs\n`);
  process.stdout.write(table(['hop', ...variants.flatMap((v) => [`${v.name}: median`, 'mean'])], hopRows));
  // Run by run: the hand-offs, which move with where the scheduler wakes each process (docs/performance.md).
  const each = (v, key) => hopRuns.get(v).map((r) => r.medians[key].toFixed(0)).join(' ');
  process.stdout.write('\nrun by run, us: round trip | router write -> middle | answer write -> middle | to the backend | to the router (medians)\n');
  for (const v of variants) {
    const trips = hopRuns.get(v).map((r) => (1e6 / r.rate).toFixed(0)).join(' ');
    process.stdout.write(`  ${v.name}: ${trips} | ${each(v, 'router write>middle bytes in')} | ${each(v, 'answer written>answer bytes in')}`
      + ` | ${each(v, 'request written>backend has the request')} | ${each(v, 'reply written>router bytes in')}\n`);
  }
  writeResult('critical-path', {
    repeats: REPEATS,
    seconds: SECONDS,
    variants: variants.map((v) => ({
      name: v.name,
      steps: Object.fromEntries(STEPS.map(([key]) => [key, fig(v, key)])),
      gatewaySideUs: ours(v),
      roundTripUs: roundTrip(v),
      hops: Object.fromEntries(HOP_KEYS.map((key) => [key, { median: hop(v, key, 'medians'), mean: hop(v, key, 'means') }])),
      runs: runs.get(v),
      hopRuns: hopRuns.get(v),
    })),
  });
}

main().catch((err) => {
  process.stderr.write(`critical-path: ${err.message}\n`);
  process.exitCode = 1;
});
