'use strict';

// What the trace subscriber costs per query, in this process, on the diagnostics channels the core
// publishes on: a query's start and settle and one backend request (start, headers, end), as the
// core publishes them (only under hasSubscribers). Three ways: nobody subscribed (traces off),
// subscribed with the always_off sampler (spans made but not recorded: the traceparent only), and
// sampled at 100 % with the OTLP/HTTP protobuf exporter sending to a loopback sink that discards.
// "wall" is the time spent publishing (on the query's path; a loaded machine inflates it); "CPU" is
// the process's CPU for the same queries with the batching and export,
// measured after the last span left. BENCH_QUERIES (20000), BENCH_REPEATS (3): the median is printed.
// The queries go in slices of SLICE with the event loop let run between them, as a gateway's
// queries arrive, and the export queue holds them all: a span dropped for a full queue costs
// nothing to encode, and would flatter the figure (the run stops if one is).

const dc = require('node:diagnostics_channel');
const http = require('node:http');
const { once } = require('node:events');
const { performance } = require('node:perf_hooks');
const { loadConfig } = require('../gateway/config');
const { startTracing } = require('../gateway/ops/telemetry');

const QUERIES = Number(process.env.BENCH_QUERIES || 20_000);
const REPEATS = Number(process.env.BENCH_REPEATS || 3);
const SLICE = 200;
const ch = Object.fromEntries(['query:start', 'query:settle', 'backend:request:start', 'backend:request:headers', 'backend:request:end']
  .map((n) => [n, dc.channel(`ged145:${n}`)]));
const gateway = { metrics: null };
const session = { id: 1, peer: '127.0.0.1:40000', side: 'A' };
const silent = { info() {}, warn() {}, error() {}, debug() {} };

function oneQuery(i) {
  const query = {
    invokeId: i, subtype: 'cust', side: 'A', receivedAt: performance.now(), fields: { clid: '5551000001' }, labels: {},
  };
  if (ch['query:start'].hasSubscribers) ch['query:start'].publish({ gateway, session, query });
  const request = {
    kind: 'query', route: 'cust', method: 'GET', origin: 'http://127.0.0.1:9', template: '/customers/{clid}', path: '/customers/5551000001', attempt: 1,
    headers: {},
    setHeader(name, value) { this.headers[name] = value; },
  };
  if (ch['backend:request:start'].hasSubscribers) ch['backend:request:start'].publish({ gateway, query, request });
  if (ch['backend:request:headers'].hasSubscribers) ch['backend:request:headers'].publish({ gateway, request, statusCode: 200 });
  if (ch['backend:request:end'].hasSubscribers) {
    ch['backend:request:end'].publish({
      gateway, request, statusCode: 200, ms: 1, result: 'ok',
    });
  }
  if (ch['query:settle'].hasSubscribers) {
    ch['query:settle'].publish({
      gateway, session, query, outcome: 'ok', status: null, ms: 1, late: false,
    });
  }
}

async function run(mode, sink) {
  const client = require('prom-client');
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink,
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_BSP_MAX_QUEUE_SIZE: String(4 * QUERIES),
    OTEL_TRACES_SAMPLER: mode === 'always_off' ? 'always_off' : 'always_on',
  };
  const tracing = mode === 'off' ? null : startTracing(loadConfig({ env: {} }), { log: silent, env });
  const registry = new client.Registry();
  if (tracing) tracing.attach(gateway, { registry });
  const publish = async (count) => {
    let pathMs = 0;
    for (let i = 0; i < count; i += SLICE) {
      const t0 = performance.now();
      for (let j = i; j < Math.min(i + SLICE, count); j++) oneQuery(j);
      pathMs += performance.now() - t0;
      await new Promise(setImmediate);
    }
    return pathMs;
  };
  await publish(2000); // warm the code up
  if (tracing) await tracing.processor.forceFlush();
  const cpu0 = process.cpuUsage();
  const pathMs = await publish(QUERIES);
  if (tracing) await tracing.processor.forceFlush();
  const cpu = process.cpuUsage(cpu0);
  if (tracing) await tracing.stop();
  const dropped = (await registry.getMetricsAsJSON()).flatMap((m) => m.values).reduce((n, v) => n + v.value, 0);
  if (dropped > 0) throw new Error(`${mode}: ${dropped} spans dropped; the figure would not be what a span costs`);
  return { pathUs: (pathMs * 1000) / QUERIES, cpuUs: (cpu.user + cpu.system) / QUERIES };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const sink = `http://127.0.0.1:${server.address().port}`;
  const rows = [];
  for (const mode of ['off', 'always_off', 'always_on']) {
    const runs = [];
    for (let r = 0; r < REPEATS; r++) runs.push(await run(mode, sink));
    rows.push({ mode, path: median(runs.map((x) => x.pathUs)), cpu: median(runs.map((x) => x.cpuUs)) });
  }
  server.close();
  const line = (a, b, c) => `${a.padEnd(34)}${b.padStart(16)}${c.padStart(22)}`;
  process.stdout.write(`${line('traces', 'wall µs/query', 'CPU µs/query (all)')}\n`);
  const names = { off: 'off (no subscriber)', always_off: 'on, sampler always_off', always_on: 'on, sampled 100 %, OTLP protobuf' };
  for (const r of rows) process.stdout.write(`${line(names[r.mode], r.path.toFixed(2), r.cpu.toFixed(2))}\n`);
  process.stdout.write(`(${QUERIES} queries, median of ${REPEATS}; one backend request per query; node ${process.version})\n`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
