'use strict';

// 2. HTTP client limit and 3. engines: queries through the gateway versus the same engine calling
// the same backend directly, at concurrency 1 (added latency) and 32 (throughput), against a
// plain node:http backend (never the bottleneck) and against rest-sim. Reports gateway/direct.

const {
  startPlainBackend, startRestSim, startGateway, runClient, runDirect, medianRun, cpuMeter, REPEATS, SECONDS,
} = require('./harness');
const { table, writeResult } = require('./report');

async function main() {
  const engines = (process.env.BENCH_ENGINES || 'undici,axios').split(',');
  const plain = await startPlainBackend();
  const sim = await startRestSim();
  const rows = [];
  for (const [backendName, backend] of [['plain', plain], ['rest-sim', sim]]) {
    for (const engine of engines) {
      const gw = await startGateway(backend.url, ['--engine', engine]);
      for (const concurrency of [1, 32]) {
        const d = await medianRun(REPEATS, 'rate', () => runDirect(engine, backend.url, concurrency));
        const meter = cpuMeter(gw.pid);
        const g = await medianRun(REPEATS, 'rate', () => runClient({ port: gw.port, kind: 'query', window: concurrency, durationMs: SECONDS * 1000 }));
        const usage = meter();
        rows.push({
          backend: backendName, engine, concurrency, direct: d, gateway: g, ratio: g.rate / d.rate, addedP50Ms: g.p50 - d.p50, gatewayCpuPct: usage.cpuPct,
          gatewayRssMb: usage.rssMb,
        });
      }
      await gw.stop();
    }
  }
  process.stdout.write(table(['backend', 'engine', 'conc', 'direct/s', 'gateway/s', 'gw/direct', 'direct p50', 'gateway p50', 'added p50 ms', 'lost', 'dup'],
    rows.map((r) => [
      r.backend, r.engine, r.concurrency, Math.round(r.direct.rate), Math.round(r.gateway.rate), r.ratio, r.direct.p50, r.gateway.p50, r.addedP50Ms,
      r.gateway.lost, r.gateway.duplicated,
    ])));
  const u = rows.filter((r) => r.backend === 'plain' && r.concurrency === 32);
  if (u.length === 2) {
    const ratio = (u[0].gateway.rate / u[1].gateway.rate).toFixed(2);
    process.stdout.write(`undici/axios through the gateway at concurrency 32 (plain backend): ${ratio}x\n`);
  }
  writeResult('http', { repeats: REPEATS, seconds: SECONDS, rows });
  await Promise.all([plain.stop(), sim.stop()]);
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
