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
// A second table follows the whole round trip from process to process (bench/hops.js): the
// router's write to its bytes in the middle, the middle's side, its request to the backend having
// it, and so on back to the router's next write. Each run has a backend of its own. On a machine
// whose processes share cores, the hand-offs between processes are most of a round trip, and they
// change from run to run with where the scheduler wakes each process: the run-by-run lines show it.
//   node bench/critical-path.js
//   BENCH_REPEATS=5 BENCH_SECONDS=3 node bench/critical-path.js
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js node bench/critical-path.js   (a second build, interleaved)
//   BENCH_TAILS=1 node bench/critical-path.js   (also each write to the loop's next turn)

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  start, startGateway, startBareProxy, runClient, median, REPEATS, SECONDS, GATEWAY_NODE_ARGS,
} = require('./harness');
const { table, writeResult } = require('./report');
const { HOPS, hopTimes, routerMoments } = require('./hops');

const PROBE = path.join(__dirname, 'critical-path-probe.js');

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

/** Starts one variant with the probe in its process: {port, child, stop}. */
async function startVariant(variant, backendUrl) {
  const probe = ['--require', PROBE];
  if (variant.bin === undefined) return startBareProxy(backendUrl, [...variant.nodeArgs, ...probe]);
  return startGateway(backendUrl, [], variant.bin, [...GATEWAY_NODE_ARGS, ...probe]);
}

/** One run of one variant, with a backend of its own: its medians by gap key, the client's rate, and each process's moments (bench/hops.js). */
async function runOnce(variant, dir) {
  // The backend notes when each request reached it and when its answer left.
  const backendFile = path.join(dir, 'backend.json');
  const backend = await start(['--require', path.join(__dirname, 'hops.js'), path.join(__dirname, 'plain-backend.js')], /^(\d+)\n/, {
    env: { CRITICAL_PATH_HOPS: 'backend', CRITICAL_PATH_HOPS_FILE: backendFile },
  });
  // The probe finds the gateway's modules below the checkout it runs from.
  process.env.CRITICAL_PATH_ROOT = variant.root;
  process.env.CRITICAL_PATH_TAILS = TAILS ? '1' : '0';
  process.env.CRITICAL_PATH_HOPS = 'middle';
  process.env.CRITICAL_PATH_HOPS_FILE = path.join(dir, 'middle.json');
  let p;
  let r;
  let err = '';
  const router = routerMoments();
  try {
    p = await startVariant(variant, `http://127.0.0.1:${backend.match[1]}`);
    p.child.stderr.on('data', (c) => { err += c; });
    // A first connection warms the process up; the probe counts from the second one on.
    await runClient({ port: p.port, kind: 'query', window: 1, durationMs: 1000 });
    router.watch(p.port);
    r = await runClient({ port: p.port, kind: 'query', window: 1, durationMs: SECONDS * 1000 });
  } finally {
    router.restore();
    if (p !== undefined) await p.stop();
    await backend.stop();
  }
  const line = /^critical-path (.*)$/m.exec(err);
  if (line === null) throw new Error(`${variant.name}: the probe wrote no figures${err ? `: ${err.slice(-500)}` : ''}`);
  const read = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));
  return {
    ...JSON.parse(line[1]), rate: r.rate, moments: { router: router.toJSON(), middle: read(process.env.CRITICAL_PATH_HOPS_FILE), backend: read(backendFile) },
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
  try {
    for (let i = 0; i < REPEATS; i++) {
      // Variants take turns going first, so that none always meets the machine in the same state.
      const order = i % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) runs.get(v).push(await runOnce(v, dir));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  for (const r of [...runs.values()].flat()) {
    const times = hopTimes(r.moments.router, r.moments.middle, r.moments.backend);
    if (times[0].length === 0) throw new Error('no round trip could be followed from process to process');
    r.hops = { counted: times[0].length, medians: Object.fromEntries(HOPS.map(([from, to], h) => [`${from}>${to}`, median(times[h])])) };
    delete r.moments;
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
  const hop = (v, key) => median(runs.get(v).map((r) => r.hops.medians[key]));
  const hopRows = HOPS.map(([from, to, what]) => [what, ...variants.map((v) => us(hop(v, `${from}>${to}`)))]);
  hopRows.push(['the hops together', ...variants.map((v) => us(HOPS.reduce((sum, [from, to]) => sum + hop(v, `${from}>${to}`), 0)))]);
  hopRows.push(['round trips counted (median of the runs)', ...variants.map((v) => String(median(runs.get(v).map((r) => r.hops.counted))))]);
  process.stdout.write(`\nthe round trip between the processes, hop by hop, us, median of ${REPEATS} runs\n`);
  process.stdout.write(table(['hop', ...variants.map((v) => v.name)], hopRows));
  // Run by run: a process woken on a core that was idle waits for it to wake, so these move together.
  const each = (v, key) => runs.get(v).map((r) => r.hops.medians[key].toFixed(0)).join(' ');
  process.stdout.write('\nrun by run, us: round trip | router write -> middle | answer write -> middle | to the backend | to the router\n');
  for (const v of variants) {
    const trips = runs.get(v).map((r) => (1e6 / r.rate).toFixed(0)).join(' ');
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
      hops: Object.fromEntries(HOPS.map(([from, to]) => [`${from}>${to}`, hop(v, `${from}>${to}`)])),
      runs: runs.get(v),
    })),
  });
}

main().catch((err) => {
  process.stderr.write(`critical-path: ${err.message}\n`);
  process.exitCode = 1;
});
