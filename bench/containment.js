'use strict';

// What it costs per query to contain a handler module's errors, each way that was weighed
// (docs/reliability.md, "A handler's bug costs that query only"):
//   - plain: `await handler(query)`, nothing to attribute an escaped error with;
//   - als: the same inside AsyncLocalStorage.run(route, ...), so that a timer, an event or an
//     un-awaited promise of the handler's is known to be that route's;
//   - worker: the query posted to a worker thread that runs the handler, the answer posted back
//     (one at a time, and 64 in flight);
//   - rest path, hooks off / on: a query's promise path without user code (40 hops: the engine,
//     the breaker, the chain's layers, the handle), in a process where no AsyncLocalStorage ever ran,
//     and in one where one did: on Node 20, the first AsyncLocalStorage.run turns V8's promise
//     hooks on for every promise of the process.
//   - fit, 200,000 ECC entries / eccArrays elements: one handler answer that large made into a
//     QUERY_RESP of 8 KiB (answer/fit.js, answer/writer.js), the time every session waits meanwhile.
// Each case runs in its own child process, so that one case's promise hooks never slow another.
// Prints µs per query (median of REPEATS runs) and writes bench/results/containment.json.

const { fork } = require('node:child_process');
const { table, writeResult } = require('./report');

const REPEATS = Number(process.env.BENCH_REPEATS || 5);
const N = Number(process.env.BENCH_QUERIES || 100_000);
const QUERY = {
  subtype: 'cust', invokeId: 7, routerCallDay: 154321, routerCallKey: 1234, clid: '5551234567', ced: '1234#', vars: { 1: 'a' },
};
const handler = async (q) => ({ vars: { 1: q.clid, 2: 'gold' }, ecc: { 'user.tier': '1' } });

/** A query's path through the gateway's promise layers without user code: HOPS awaits. */
const HOPS = 40;
async function hop(n) {
  if (n === 0) return 1;
  return (await hop(n - 1)) + 1;
}

const CASES = {
  async plain() {
    for (let i = 0; i < N; i++) await handler(QUERY);
  },
  async als() {
    const { AsyncLocalStorage } = require('node:async_hooks');
    const als = new AsyncLocalStorage();
    for (let i = 0; i < N; i++) await als.run('cust', handler, QUERY);
  },
  async 'rest path, hooks off'() {
    for (let i = 0; i < N / 10; i++) await hop(HOPS);
  },
  async 'rest path, hooks on'() {
    const { AsyncLocalStorage } = require('node:async_hooks');
    new AsyncLocalStorage().run('cust', () => {}); // a handler ran once in this process
    for (let i = 0; i < N / 10; i++) await hop(HOPS);
  },
  'fit, 200,000 ECC entries': () => fitCase(() => ({ ecc: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`user.e${i}`, `v${i}`])) })),
  'fit, 200,000 eccArrays elements': () => fitCase(() => ({
    eccArrays: Array.from({ length: 200_000 }, (_, i) => ({ name: 'user.list', index: i % 256, value: `v${i}` })),
  })),
  worker: () => workerCase(1),
  'worker, 64 in flight': () => workerCase(64),
};
const FITS = 5;
const PER_QUERY = {
  'rest path, hooks off': N / 10, 'rest path, hooks on': N / 10, 'fit, 200,000 ECC entries': FITS, 'fit, 200,000 eccArrays elements': FITS,
};

let answerOnce = null;
/** FITS answers of one (made once, unmeasured, as a handler keeping a table would) fitted to 8 KiB frames. */
async function fitCase(make) {
  const { ReplyWriter } = require('../gateway/answer/writer');
  if (answerOnce === null) answerOnce = make();
  const writer = new ReplyWriter({ maxBody: 8192 });
  for (let i = 0; i < FITS; i++) writer.queryResp({ invokeId: i }, answerOnce);
}

async function workerCase(depth) {
  const { Worker } = require('node:worker_threads');
  const w = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const handler = async (q) => ({ vars: { 1: q.clid, 2: 'gold' }, ecc: { 'user.tier': '1' } });
    parentPort.on('message', async ({ id, q }) => parentPort.postMessage({ id, answer: await handler(q) }));
  `, { eval: true });
  const waiting = new Map();
  w.on('message', ({ id, answer }) => {
    const r = waiting.get(id);
    waiting.delete(id);
    r(answer);
  });
  let next = 0;
  const ask = () => new Promise((resolve) => {
    const id = next++;
    waiting.set(id, resolve);
    w.postMessage({ id, q: QUERY });
  });
  const lane = async (n) => { for (let i = 0; i < n; i++) await ask(); };
  await Promise.all(Array.from({ length: depth }, () => lane(N / depth)));
  await w.terminate();
}

async function child(name) {
  await CASES[name](); // warm-up
  const t0 = process.hrtime.bigint();
  await CASES[name]();
  const us = Number(process.hrtime.bigint() - t0) / 1e3;
  process.send({ usPerQuery: us / (PER_QUERY[name] || N) });
}

function runCase(name) {
  return new Promise((resolve, reject) => {
    const c = fork(__filename, [name], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    c.once('message', (m) => resolve(m.usPerQuery));
    c.once('exit', (code) => { if (code !== 0) reject(new Error(`${name}: exit ${code}`)); });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const rows = [];
  const results = {};
  for (const name of Object.keys(CASES)) {
    const runs = [];
    for (let r = 0; r < REPEATS; r++) runs.push(await runCase(name));
    results[name] = median(runs);
    rows.push([name, median(runs), Math.min(...runs), Math.max(...runs)]);
  }
  process.stdout.write(table(['case', 'µs/query (median)', 'min', 'max'], rows));
  writeResult('containment', { queries: N, repeats: REPEATS, hops: HOPS, results });
}

if (process.argv[2] !== undefined) child(process.argv[2]).then(() => process.exit(0));
else main().catch((err) => { process.stderr.write(`${err.stack}\n`); process.exit(1); });
