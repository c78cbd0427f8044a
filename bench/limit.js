'use strict';

// The query path against its physical limit, in one run with the variants interleaved
// so that each repeat sees the same noise:
//   sequential: limit = bare framed round trip (the same QUERY_REQ to a server that does no work)
//               + direct HTTP round trip (the gateway's engine, same request, same backend);
//               ratio = limit time / gateway time (1.00 = the gateway adds nothing of its own).
//   bare proxy: the least a gateway can do on the same path (bench/bare-proxy.js: framing, the same
//               engine and request, an empty QUERY_RESP; no session, deadline, metrics or reply
//               encoding), as the same ratio: how much of the gap is the gateway's own work.
//   concurrency 32: gateway queries/s / direct HTTP queries/s, and the CPU per query of every process
//               on each path, which bounds that ratio on a machine whose cores they share.
// Each ratio is the median of the per-repeat ratios.
//   BENCH_REPEATS=5 BENCH_SECONDS=3 BENCH_ENGINES=undici,axios node bench/limit.js
//   BENCH_GATEWAY_ARGS='--config my.json' node bench/limit.js   (more flags for this build's gateway)
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js node bench/limit.js   (a second build, interleaved)

const http = require('node:http');
const {
  startBare, startBareProxy, startPlainBackend, startGateway, runClient, runDirect, cpuMeter, median, REPEATS, SECONDS,
} = require('./harness');
const { table, writeResult } = require('./report');
const { readProc } = require('../runner/monitor');

const usPerQuery = ({ cpuPct }, rate) => (cpuPct * 10_000) / rate;

const served = (url) => new Promise((resolve, reject) => {
  http.get(`${url}/served`, (res) => {
    let body = '';
    res.on('data', (c) => { body += c; }).on('end', () => resolve(Number(body)));
  }).on('error', reject);
});

/** The backend's CPU per request it served between the call and the returned function's. */
async function backendMeter(backend) {
  const [first, t0] = [readProc(backend.pid), await served(backend.url)];
  return async () => {
    const n = (await served(backend.url)) - t0;
    return ((readProc(backend.pid).ticks - first.ticks) * 10_000) / n;
  };
}

async function main() {
  const engines = (process.env.BENCH_ENGINES || 'undici').split(',');
  const builds = [['this build', undefined]];
  if (process.env.BENCH_BASELINE_BIN) builds.push(['baseline', process.env.BENCH_BASELINE_BIN]);
  const bare = await startBare();
  const backend = await startPlainBackend();
  const proxy = await startBareProxy(backend.url);
  const proxyRatios = [];
  const proxyRates = [];
  const proxy32 = []; // {rate, us}: the bare proxy at concurrency 32, the floor under the gateway's CPU per query
  const rows = [];
  for (const engine of engines) {
    const own = (process.env.BENCH_GATEWAY_ARGS || '').split(' ').filter(Boolean);
    const gateways = [];
    for (const [name, bin] of builds) {
      gateways.push({ name, gw: await startGateway(backend.url, ['--engine', engine, ...(bin ? [] : own)], bin), repeats: [] });
    }
    const query = (port, window) => runClient({ port, kind: 'query', window, durationMs: SECONDS * 1000 });
    for (let i = 0; i < REPEATS; i++) {
      const b = await query(bare.port, 1);
      const d1 = await runDirect(engine, backend.url, 1);
      const limitMs = 1000 / b.rate + 1000 / d1.rate;
      if (engine === 'undici') {
        const p1 = await query(proxy.port, 1);
        proxyRates.push(p1.rate);
        proxyRatios.push(limitMs / (1000 / p1.rate));
      }
      // Builds take turns going first: the one measured right after the direct client would
      // otherwise always meet the machine in the same state.
      const order = i % 2 === 0 ? gateways : [...gateways].reverse();
      const seq = new Map();
      for (const g of order) {
        const meter = cpuMeter(g.gw.pid);
        seq.set(g, [await query(g.gw.port, 1), meter()]);
      }
      const directBackend = await backendMeter(backend);
      const d32 = await runDirect(engine, backend.url, 32);
      d32.backendUs = await directBackend();
      const d32t = await runDirect(engine, backend.url, 32, 'timeout');
      for (const g of gateways) g.repeats.push({ b, d1, d32, d32t, limitMs, g1: seq.get(g)[0], cpu1: seq.get(g)[1] });
      for (const g of order) {
        const [gwMeter, beMeter] = [cpuMeter(g.gw.pid), await backendMeter(backend)];
        const g32 = await query(g.gw.port, 32);
        Object.assign(g32, { gatewayUs: usPerQuery(gwMeter(), g32.rate), backendUs: await beMeter() });
        g.repeats[i].g32 = g32;
      }
      if (engine === 'undici') {
        const meter = cpuMeter(proxy.pid);
        const p32 = await query(proxy.port, 32);
        proxy32.push({ rate: p32.rate, us: usPerQuery(meter(), p32.rate) });
      }
    }
    for (const { name, gw, repeats } of gateways) {
      await gw.stop();
      const m = (f) => median(repeats.map(f));
      const seqRatios = repeats.map((r) => r.limitMs / (1000 / r.g1.rate));
      const c32Ratios = repeats.map((r) => r.g32.rate / r.d32.rate);
      const c32DeadlineRatios = repeats.map((r) => r.g32.rate / r.d32t.rate);
      rows.push({
        engine, build: name, bare: m((r) => r.b.rate), direct1: m((r) => r.d1.rate), gateway1: m((r) => r.g1.rate), limitMs: m((r) => r.limitMs),
        gatewayMs: m((r) => 1000 / r.g1.rate), seqRatio: median(seqRatios), seqRatios, gatewayUsPerQuery: m((r) => (r.cpu1.cpuPct * 10_000) / r.g1.rate),
        direct32: m((r) => r.d32.rate), gateway32: m((r) => r.g32.rate), c32Ratio: median(c32Ratios), c32Ratios,
        direct32Deadline: m((r) => r.d32t.rate), c32DeadlineRatio: median(c32DeadlineRatios), c32DeadlineRatios,
        cpu32: {
          client: m((r) => r.d32.cpuUsPerQuery), directBackend: m((r) => r.d32.backendUs),
          router: m((r) => r.g32.cpuUsPerQuery), gateway: m((r) => r.g32.gatewayUs), backend: m((r) => r.g32.backendUs),
          ceiling: median(repeats.map((r) => (r.d32.cpuUsPerQuery + r.d32.backendUs) / (r.g32.cpuUsPerQuery + r.g32.gatewayUs + r.g32.backendUs))),
        },
        errors: repeats.reduce((a, r) => a + r.g1.errors + r.g32.errors + r.d1.errors + r.d32.errors, 0),
        lost: repeats.reduce((a, r) => a + r.g1.lost + r.g32.lost, 0), duplicated: repeats.reduce((a, r) => a + r.g1.duplicated + r.g32.duplicated, 0),
      });
    }
  }
  const list = (xs) => xs.map((x) => x.toFixed(2)).join(' ');
  process.stdout.write(table(['engine', 'gateway', 'bare/s', 'direct/s', 'gateway/s', 'limit ms', 'gateway ms', 'seq ratio', 'gw CPU us/q', 'runs'],
    rows.map((r) => [r.engine, r.build, Math.round(r.bare), Math.round(r.direct1), Math.round(r.gateway1), r.limitMs * 1, r.gatewayMs * 1, r.seqRatio,
      Math.round(r.gatewayUsPerQuery), list(r.seqRatios)])));
  if (proxyRatios.length > 0) {
    process.stdout.write(`bare proxy (undici): ${Math.round(median(proxyRates))}/s, seq ratio ${median(proxyRatios).toFixed(2)} (runs ${list(proxyRatios)})\n`);
  }
  process.stdout.write('\n');
  const c32Headers = ['engine', 'gateway', 'direct c32/s', 'gateway c32/s', 'c32 ratio', 'runs', 'direct+deadline/s', 'ratio', 'runs', 'errors', 'lost', 'dup'];
  process.stdout.write(table(c32Headers,
    rows.map((r) => [r.engine, r.build, Math.round(r.direct32), Math.round(r.gateway32), r.c32Ratio, list(r.c32Ratios), Math.round(r.direct32Deadline),
      r.c32DeadlineRatio, list(r.c32DeadlineRatios), r.errors, r.lost, r.duplicated])));
  process.stdout.write('\n');
  // Both runs at concurrency 32 are CPU-bound on this machine's cores, which the processes share:
  // a query costs the direct path client + backend CPU, the gateway path router + gateway + backend.
  // ceiling = the c32 ratio those costs allow, whatever the gateway does with its time.
  process.stdout.write(table(['engine', 'gateway', 'direct: client', 'backend', 'via gateway: router', 'gateway', 'backend', 'ceiling'],
    rows.map(({ engine, build, cpu32: c }) => [engine, build, ...[c.client, c.directBackend, c.router, c.gateway, c.backend].map(Math.round), c.ceiling])));
  if (proxy32.length > 0) {
    process.stdout.write(`bare proxy (undici) at concurrency 32: ${Math.round(median(proxy32.map((p) => p.rate)))}/s, `
      + `${Math.round(median(proxy32.map((p) => p.us)))} us of CPU per query (runs ${proxy32.map((p) => Math.round(p.us)).join(' ')}): `
      + 'the least a gateway can spend on this path\n');
  }
  process.stdout.write('CPU us per query at concurrency 32 (medians); ceiling = (client + backend) / (router + gateway + backend)\n');
  process.stdout.write('targets: seq ratio >= 0.85, c32 ratio >= 0.85. direct = a bare POST with the same engine; direct+deadline = each POST with\n'
    + 'AbortSignal.timeout(250), as a client that honours a deadline writes it\n');
  const bareProxy = proxyRatios.length > 0 ? {
    rate: median(proxyRates),
    seqRatio: median(proxyRatios),
    seqRatios: proxyRatios,
    c32Rate: median(proxy32.map((p) => p.rate)),
    c32CpuUs: median(proxy32.map((p) => p.us)),
  } : null;
  writeResult('limit', { repeats: REPEATS, seconds: SECONDS, rows, bareProxy });
  await Promise.all([bare.stop(), backend.stop(), proxy.stop()]);
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
