'use strict';

// The gateway's memory while its shadow candidate hangs (docs/safe-change.md): the REST
// simulator as the live backend, a candidate that accepts every request and never answers, every
// query of two subtypes shadowed (sample 1), and the router simulator at BENCH_RATE (500)
// queries/s for BENCH_SECONDS (40). The gateway's RSS every 2 s, beside the same run with no
// shadow; the router's answers (every query answered once, from the live backend), and the shadow
// counts from /metrics: what could not be sent over the shadow's cap is counted as dropped, what
// was sent ends as candidate_failed at the shadow's own deadline.
//   node bench/shadow-hang.js
//   BENCH_RATE=2000 BENCH_SECONDS=60 node bench/shadow-hang.js

const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { startRestSim, startGateway } = require('./harness');
const { Router } = require('../simulator/router');
const { readProc } = require('../runner/monitor');
const { table, writeResult } = require('./report');

const RATE = Number(process.env.BENCH_RATE || 500);
const SECONDS = Number(process.env.BENCH_SECONDS || 40);
const EVERY_MS = 2000;

const rssMb = (pid) => readProc(pid).rssKb / 1024;

/** One gateway with the config file, the router at RATE for SECONDS: {rss: [MB every EVERY_MS], router, shadow: {result: n}}. */
async function run(backendUrl, configFile) {
  const gw = await startGateway(backendUrl, ['--config', configFile]);
  const rss = [];
  try {
    const router = new Router({ targets: [{ host: '127.0.0.1', port: gw.port }], seed: 1 });
    await router.start();
    const timer = setInterval(() => rss.push(rssMb(gw.pid)), EVERY_MS);
    rss.push(rssMb(gw.pid));
    await router.runOpenLoop({ rate: RATE, durationMs: SECONDS * 1000 });
    await router.stop();
    clearInterval(timer);
    const summary = router.stats.summary();
    const metrics = await (await fetch(`http://127.0.0.1:${gw.adminPort}/metrics`)).text();
    const shadow = {};
    for (const m of metrics.matchAll(/^ged145_shadow_total\{[^}]*result="([a-z_]+)"\} (\d+)$/gm)) shadow[m[1]] = (shadow[m[1]] || 0) + Number(m[2]);
    return { rss, router: summary, shadow };
  } finally {
    await gw.stop();
  }
}

async function main() {
  const hang = http.createServer(() => {}); // accepts every request, answers none
  await new Promise((resolve) => { hang.listen(0, '127.0.0.1', resolve); });
  const live = await startRestSim();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-bench-'));
  const shadow = { candidate: 'hangs', sample: 1 };
  const configs = {
    'shadow to a candidate that hangs': {
      candidates: { hangs: { backend: `http://127.0.0.1:${hang.address().port}` } },
      routes: { 'customer.lookup': { shadow }, echo: { shadow } },
    },
    'no shadow': {},
  };
  const results = {};
  try {
    for (const [label, config] of Object.entries(configs)) {
      const file = path.join(dir, `${Object.keys(results).length}.json`);
      fs.writeFileSync(file, JSON.stringify(config));
      results[label] = await run(live.url, file);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true }); // a benchmark leaves nothing in /tmp either
    hang.closeAllConnections();
    hang.close();
    await live.stop();
  }
  const rows = Object.entries(results).map(([label, r]) => {
    const after = r.rss.slice(Math.ceil(10_000 / EVERY_MS)); // from 10 s on, once the shadow's cap is full
    return [label, r.router.sent, r.router.ok, Object.values(r.router.failures).reduce((a, b) => a + b, 0), r.router.lost + r.router.timeout,
      r.router.latencyMs.p99, Math.min(...after), Math.max(...after), after[after.length - 1] - after[0]];
  });
  process.stdout.write(table(['run', 'sent', 'ok', 'failed', 'lost', 'p99 ms', 'RSS min MB', 'RSS max MB', 'RSS 10 s -> end MB'], rows));
  for (const [label, r] of Object.entries(results)) {
    process.stdout.write(`${label}: RSS every ${EVERY_MS / 1000} s: ${r.rss.map((x) => x.toFixed(1)).join(' ')}\n`);
    if (Object.keys(r.shadow).length > 0) process.stdout.write(`  ged145_shadow_total by result: ${JSON.stringify(r.shadow)}\n`);
  }
  writeResult('shadow-hang', { rate: RATE, seconds: SECONDS, results });
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
