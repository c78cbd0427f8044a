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
//   node bench/critical-path.js
//   BENCH_REPEATS=5 BENCH_SECONDS=3 node bench/critical-path.js
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js node bench/critical-path.js   (a second build, interleaved)
//   BENCH_TAILS=1 node bench/critical-path.js   (also each write to the loop's next turn)

const path = require('node:path');
const {
  startPlainBackend, startGateway, startBareProxy, runClient, median, REPEATS, SECONDS, GATEWAY_NODE_ARGS,
} = require('./harness');
const { table, writeResult } = require('./report');

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

/** One run of one variant: its medians by gap key, and the client's rate. */
async function runOnce(variant, backendUrl) {
  // The probe finds the gateway's modules below the checkout it runs from.
  process.env.CRITICAL_PATH_ROOT = variant.root;
  process.env.CRITICAL_PATH_TAILS = TAILS ? '1' : '0';
  const p = await startVariant(variant, backendUrl);
  let err = '';
  p.child.stderr.on('data', (c) => { err += c; });
  // A first connection warms the process up; the probe counts from the second one on.
  await runClient({ port: p.port, kind: 'query', window: 1, durationMs: 1000 });
  const r = await runClient({ port: p.port, kind: 'query', window: 1, durationMs: SECONDS * 1000 });
  await p.stop();
  const line = /^critical-path (.*)$/m.exec(err);
  if (line === null) throw new Error(`${variant.name}: the probe wrote no figures${err ? `: ${err.slice(-500)}` : ''}`);
  return { ...JSON.parse(line[1]), rate: r.rate };
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
  const backend = await startPlainBackend();
  const runs = new Map(variants.map((v) => [v, []]));
  try {
    for (let i = 0; i < REPEATS; i++) {
      // Variants take turns going first, so that none always meets the machine in the same state.
      const order = i % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) runs.get(v).push(await runOnce(v, backend.url));
    }
  } finally {
    await backend.stop();
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
  writeResult('critical-path', {
    repeats: REPEATS,
    seconds: SECONDS,
    variants: variants.map((v) => ({
      name: v.name,
      steps: Object.fromEntries(STEPS.map(([key]) => [key, fig(v, key)])),
      gatewaySideUs: ours(v),
      roundTripUs: roundTrip(v),
      runs: runs.get(v),
    })),
  });
}

main().catch((err) => {
  process.stderr.write(`critical-path: ${err.message}\n`);
  process.exitCode = 1;
});
