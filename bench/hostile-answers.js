'use strict';

// What a hostile backend answer costs everyone else: for each shape at backend.maxResponseBytes
// (tests/helpers/hostile-shapes.js: error texts outside ASCII, a SOAP faultstring, XML of many
// elements, attributes or levels and XML just within each budget, JSON deep and wide, many ECC
// arrays, handler answers of 200,000 entries) and a plain answer beside them, a real gateway
// process answers QUERIES of it one after another while a second router session sends a heartbeat
// every 5 ms. Per shape: the longest event-loop block of the gateway process
// (perf_hooks.monitorEventLoopDelay, through bench/loop-probe.js), the heartbeats' median and
// longest reply time, the hostile query's median reply time, and whether each was answered once
// as its shape means. Goal: no shape holds the loop over 20 ms. Writes bench/results/hostile-answers.json.
//   BENCH_QUERIES (20): queries per shape

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { serialize } = require('../lib/protocol');
const { startGatewayProcess } = require('./harness');
const { table, writeResult } = require('./report');
const { WireClient } = require('../tests/helpers/wire');
const { startHostileBackend, routesOf } = require('../tests/helpers/hostile-shapes');

const QUERIES = Number(process.env.BENCH_QUERIES || 20);
const MAX_BYTES = 65_536; // backend.maxResponseBytes's default
const HEARTBEAT_EVERY_MS = 5;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function probe(port, what) {
  const res = await fetch(`http://127.0.0.1:${port}/${what}`);
  return res.json();
}

async function main() {
  const backend = await startHostileBackend(MAX_BYTES);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-hostile-bench-'));
  const config = path.join(dir, 'gateway.json');
  fs.writeFileSync(config, JSON.stringify({
    backend: { url: backend.url }, routes: routesOf(backend.shapes), deadlineMs: 250, warmup: false, log: { level: 'error' },
  }));
  const probeFile = path.join(dir, 'loop-probe-port');
  process.env.LOOP_PROBE_FILE = probeFile; // the gateway's environment: where bench/loop-probe.js says its port
  const gw = await startGatewayProcess({
    nodeArgs: ['--require', path.join(__dirname, 'loop-probe.js')],
    args: ['--config', config, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0'],
  });
  const probePort = Number(fs.readFileSync(probeFile, 'utf8'));
  const asker = await WireClient.connect(gw.port);
  const beater = await WireClient.connect(gw.port);
  await asker.open();
  await beater.open();

  let invokeId = 10;
  const ask = async (shape) => {
    const id = ++invokeId;
    const t0 = performance.now();
    asker.query(id, { subtype: shape.subtype, ...shape.fields });
    const r = await asker.waitFor((m) => m.invokeId === id, 20_000);
    return { ms: r.receivedAt - t0, problem: shape.expect(r) };
  };

  const rows = [];
  const results = {};
  try {
    for (const shape of backend.shapes) {
      for (let i = 0; i < 3; i++) await ask(shape); // the handler's table made, the code warm: unmeasured
      await probe(probePort, 'reset');
      const sentAt = new Map();
      const beats = setInterval(() => {
        const id = ++invokeId;
        sentAt.set(id, performance.now());
        beater.send(serialize.heartbeatReq(id));
      }, HEARTBEAT_EVERY_MS);
      const replies = [];
      for (let i = 0; i < QUERIES; i++) replies.push(await ask(shape));
      clearInterval(beats);
      const loop = await probe(probePort, 'read');
      const waits = await Promise.all([...sentAt].map(async ([id, at]) => (await beater.waitFor((m) => m.invokeId === id, 20_000)).receivedAt - at));
      const wrong = replies.filter((r) => r.problem !== null);
      const result = {
        bodyBytes: shape.body === null ? null : shape.body.length,
        loopMaxMs: loop.maxMs,
        heartbeatP50Ms: waits.length === 0 ? null : median(waits),
        heartbeatMaxMs: waits.length === 0 ? null : Math.max(...waits),
        replyP50Ms: median(replies.map((r) => r.ms)),
        answeredAsMeant: `${QUERIES - wrong.length}/${QUERIES}`,
        problem: wrong.length > 0 ? wrong[0].problem : undefined,
      };
      results[shape.name] = result;
      rows.push([shape.name, result.bodyBytes === null ? 'handler' : result.bodyBytes, result.loopMaxMs, result.heartbeatP50Ms ?? '-',
        result.heartbeatMaxMs ?? '-', result.replyP50Ms, result.answeredAsMeant]);
    }
  } finally {
    asker.close();
    beater.close();
    await gw.stop();
    await backend.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(table(['shape', 'body bytes', 'loop max ms', 'heartbeat p50 ms', 'heartbeat max ms', 'reply p50 ms', 'as meant'], rows));
  for (const [name, r] of Object.entries(results)) if (r.problem) process.stdout.write(`${name}: ${r.problem}\n`);
  writeResult('hostile-answers', { queries: QUERIES, maxResponseBytes: MAX_BYTES, heartbeatEveryMs: HEARTBEAT_EVERY_MS, results });
}

main().catch((err) => { process.stderr.write(`${err.stack}\n`); process.exit(1); });
