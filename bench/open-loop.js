'use strict';

// 4. Open-loop latency: fixed rates through the router simulator (latency from each query's
// scheduled send time), with the gateway's CPU% and RSS sampled every second.
//   BENCH_RATES=1000,2000,5000 BENCH_OPEN_SECONDS=30 node bench/open-loop.js

const { startPlainBackend, startGateway } = require('./harness');
const { Router } = require('../simulator/router');
const { ProcessMonitor } = require('../runner/monitor');
const { table, writeResult } = require('./report');

async function main() {
  const rates = (process.env.BENCH_RATES || '1000,2000,5000').split(',').map(Number);
  const seconds = Number(process.env.BENCH_OPEN_SECONDS || 30);
  const backend = await startPlainBackend();
  const rows = [];
  for (const rate of rates) {
    const gw = await startGateway(backend.url, (process.env.BENCH_GATEWAY_ARGS || '').split(' ').filter(Boolean));
    const router = new Router({ targets: [{
      host: '127.0.0.1', port: gw.port,
    }], seed: 1, templates: [{ subtype: 'customer.lookup', clid: '555{rand:1000000-1009999}', dn: '8005551000' }] });
    await router.start();
    // 2 s at the same rate first, unmeasured: the backend's keep-alive pool fills and the JIT
    // settles (the gateway's own warm-up already ran before it listened).
    await router.runOpenLoop({ rate, durationMs: 2000 });
    await router.drain(1000);
    router.resetStats();
    const monitor = new ProcessMonitor([{ name: 'gateway', pid: gw.pid }], { prefer: '/proc' }).start();
    await router.runOpenLoop({ rate, durationMs: seconds * 1000 });
    const mon = monitor.stop().processes.gateway;
    const s = await router.stop();
    const errors = Object.values(s.failures).reduce((a, b) => a + b, 0) + s.timeout + s.lost + s.late + Object.values(s.violations).reduce((a, b) => a + b, 0);
    rows.push({
      rate, seconds, sent: s.sent, answered: s.answered, errors, latencyMs: s.latencyMs, cpuMean: mon.cpuMean, cpuMax: mon.cpuMax,
      rssMaxMb: mon.rssMaxKb / 1024,
    });
    await gw.stop();
  }
  process.stdout.write(table(['rate/s', 'seconds', 'answered', 'errors', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'gw CPU%', 'gw RSS MiB'],
    rows.map((r) => [r.rate, r.seconds, r.answered, r.errors, r.latencyMs.p50, r.latencyMs.p99, r.latencyMs.p999, r.latencyMs.max, r.cpuMean, r.rssMaxMb])));
  writeResult('open-loop', { rows });
  await backend.stop();
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
