'use strict';

// What a compressed answer costs: one process holds an HTTP engine and a node:http server that
// answers a routing-sized JSON object (266 bytes) as it is, gzipped in advance (the client's
// decoding alone), or gzipped for each request (what an API that compresses costs both sides).
// 20,000 requests 8 at a time after 4,000 to warm up; CPU of the process (client and server
// together) per request. Why the gateway asks for `Accept-Encoding: identity` by default
// (docs/rest-contract.md, Compressed answers).

const http = require('node:http');
const zlib = require('node:zlib');
const { performance } = require('node:perf_hooks');
const { createEngine, engineOptions } = require('../gateway/backend/engines');
const { DEFAULTS } = require('../gateway/config');
const { table, writeResult } = require('./report');

const BODY = JSON.stringify({
  vars: { 1: 'gold', 2: 'ag-34' },
  ecc: { 'user.balance': 12.5, 'user.name': 'Jose Muller' },
  customer: { id: 123456, segment: 'enterprise', notes: 'x'.repeat(120) },
});
const GZIPPED = zlib.gzipSync(BODY);
const ANSWERS = {
  identity: (res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(BODY); },
  'gzip, made in advance': (res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }); res.end(GZIPPED); },
  'gzip, made per request': (res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }); res.end(zlib.gzipSync(BODY)); },
};
const WARM = 4000;
const COUNT = 20_000;
const WINDOW = 8;

async function measure(engineName, answer) {
  const server = http.createServer((req, res) => ANSWERS[answer](res));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const engine = createEngine(engineName, engineOptions(DEFAULTS.backend));
  const headers = { accept: 'application/json', 'accept-encoding': 'gzip, deflate, br' };
  const run = async (n) => {
    for (let i = 0; i < n; i += WINDOW) {
      await Promise.all(Array.from({ length: WINDOW }, () => engine.request({
        origin, path: '/', method: 'GET', headers,
      })));
    }
  };
  await run(WARM);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(COUNT);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await engine.close();
  await new Promise((r) => server.close(r));
  return { rate: (COUNT / ms) * 1000, cpuUsPerRequest: (cpu.user + cpu.system) / COUNT };
}

async function main() {
  const rows = [];
  for (const engine of (process.env.BENCH_ENGINES || 'undici,axios').split(',')) {
    for (const answer of Object.keys(ANSWERS)) rows.push({ engine, answer, ...await measure(engine, answer) });
  }
  process.stdout.write(`answer: ${BODY.length} bytes, ${GZIPPED.length} gzipped\n`);
  const cells = rows.map((r) => [r.engine, r.answer, Math.round(r.rate), r.cpuUsPerRequest]);
  process.stdout.write(table(['engine', 'answer', 'requests/s', 'CPU us/request'], cells));
  writeResult('compression', { bodyBytes: BODY.length, gzippedBytes: GZIPPED.length, rows });
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exitCode = 1;
});
