'use strict';

// A Redis that stops answering but keeps its connection, at full length: 400 queries/s for 40 s
// on a gateway child (warm-up on) whose shared store is a real redis-server stopped with SIGSTOP,
// against the same 40 s with Redis answering (the control). Every caller is new to the process's
// cache at each ask (ttlMs 1 s, 4,000 callers, each asked every 10 s), so every query reads Redis
// and every answer is written to it. The gateway's RSS is measured before and after each; the
// frozen run must stay within the control's growth plus a margin, show the store unresponsive
// within seconds, and answer every query once and on time (no more late replies than the
// control had: a busy machine makes some late whatever Redis does). The short version is
// tests/gateway/backend/redis-store.test.js.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { WireClient } = require('../helpers/wire');
const { spawnCli } = require('../helpers/spawn');
const { tmpDir } = require('../helpers/tmp');
const { startTestBackend } = require('../helpers/stack');
const { startRedis } = require('../helpers/redis');
const { sendAtRate, routerFigures } = require('../helpers/open-loop');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const RATE = 400;
const LOAD_MS = 40_000;
const CALLERS = 4000;
/** MB the frozen run's RSS may grow beyond the control's: far below the 246 MB an unbounded pile-up reached. */
const MARGIN_MB = 40;

const rssMb = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

/** 16 ECC variables of 240 characters: an answer of about 4 KB, as a CRM's customer record with notes gives. */
const ECC = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`user.field${i}`, String(i % 10).repeat(240)]));

/**
 * A customer API answering about 4 KB; every 7th request is a 500 (stale answers or failures for
 * those). 7, prime to the number of callers, so that the failures fall on every caller in turn.
 */
async function api() {
  const b = await startTestBackend((req, res) => {
    b.requests.length = 0; // only the count matters, and 20,000 entries would weigh on this process
    b.count += 1;
    if (b.count % 7 === 0) {
      res.statusCode = 500;
      res.end('down');
      return;
    }
    const clid = /clid":"(\d+)/.exec(req.body)?.[1];
    res.end(JSON.stringify({ vars: { 1: `live-${clid}` }, ecc: ECC }));
  });
  b.count = 0;
  return b;
}

async function getJson(port, p) {
  return (await fetch(`http://127.0.0.1:${port}${p}`)).json();
}

async function outcomes(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = {};
  for (const m of text.matchAll(/^ged145_queries_total\{subtype="[^"]*",outcome="([^"]+)"\} (\d+)/gm)) out[m[1]] = (out[m[1]] || 0) + Number(m[2]);
  return out;
}

const minus = (after, before) => Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] || 0)]).filter(([, n]) => n > 0));

/** One run: warm for 5 s, then LOAD_MS at RATE with Redis frozen or not; the figures. */
async function run({ freeze }) {
  const redis = await startRedis();
  const b = await api();
  const file = path.join(tmpDir(), 'gateway.json');
  fs.writeFileSync(file, JSON.stringify({
    backend: { url: b.url }, cache: { ttlMs: 1000, staleIfErrorMs: 3_600_000, key: ['clid'], store: redis.url },
  }));
  const child = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json'],
    { env: { GED145_WARMUP: '1' } });
  try {
    const ready = await child.ready(60_000);
    const adminPort = Number(ready.adminPort);
    const c = await WireClient.connect(Number(ready.port));
    await c.open();
    const fields = (i) => ({ subtype: 'cust', clid: String(5551000000 + ((i * 7919) % CALLERS)) });
    await routerFigures(c, await sendAtRate(c, { rate: RATE, durationMs: 5000, fields }));
    const before = { rss: rssMb(child.pid), outcomes: await outcomes(adminPort) };
    if (freeze) redis.freeze();
    const t0 = performance.now();
    const load = sendAtRate(c, {
      rate: RATE, durationMs: LOAD_MS, fields: (i) => fields(i + 2000), firstId: 100_000,
    });
    let downAfterMs = null;
    let peakRss = 0;
    let loadDone = false;
    load.then(() => { loadDone = true; });
    while (!loadDone) {
      const { store } = (await getJson(adminPort, '/health')).backend.cache;
      if (downAfterMs === null && store === 'unresponsive') downAfterMs = Math.round(performance.now() - t0);
      peakRss = Math.max(peakRss, rssMb(child.pid));
      await wait(250);
    }
    const router = await routerFigures(c, await load, { waitMs: 10_000 });
    const after = { rss: rssMb(child.pid), outcomes: await outcomes(adminPort) };
    const figures = {
      freeze,
      rssBeforeMb: Math.round(before.rss),
      rssAfterMb: Math.round(after.rss),
      rssPeakMb: Math.round(peakRss),
      downAfterMs,
      router,
      outcomes: minus(after.outcomes, before.outcomes),
    };
    if (freeze) {
      redis.thaw();
      const t1 = performance.now();
      while ((await getJson(adminPort, '/health')).backend.cache.store !== 'connected' && performance.now() - t1 < 10_000) await wait(100);
      figures.connectedAfterThawMs = Math.round(performance.now() - t1);
    }
    c.close();
    return figures;
  } finally {
    child.killGroup('SIGKILL');
    await child.exited;
    redis.thaw();
    await redis.stop();
    await b.close();
  }
}

describe('stress: a frozen Redis under 400 queries/s for 40 s', function () {
  this.timeout(300_000);
  let control;

  it('control: Redis answering throughout', async () => {
    control = await run({ freeze: false });
    process.stdout.write(`      control: ${JSON.stringify(control)}\n`);
    assert.deepEqual([control.router.missing, control.router.duplicated], [0, 0]);
  });

  it('frozen: RSS within the control\'s growth + 40 MB, unresponsive within 2 s, every query answered once and on time, back after SIGCONT', async () => {
    const frozen = await run({ freeze: true });
    process.stdout.write(`      frozen: ${JSON.stringify(frozen)}\n`);
    const { router } = frozen;
    assert.deepEqual([router.missing, router.duplicated], [0, 0], JSON.stringify(router));
    // On time as the control is: a busy machine makes some replies late whatever Redis does; a freeze adds none.
    const controlLate = control ? control.router.late : 0;
    assert.ok(router.late <= controlLate + router.sent / 100, `answered 300 ms or more after the query: ${router.late}, control ${controlLate}`);
    assert.ok(frozen.downAfterMs !== null && frozen.downAfterMs <= 2000, `unresponsive after ${frozen.downAfterMs} ms`);
    const grew = frozen.rssAfterMb - frozen.rssBeforeMb;
    const controlGrew = control ? control.rssAfterMb - control.rssBeforeMb : 0;
    assert.ok(grew <= Math.max(controlGrew, 0) + MARGIN_MB, `RSS grew ${grew} MB frozen, ${controlGrew} MB in the control`);
    assert.ok(frozen.connectedAfterThawMs < 10_000, 'connected again after SIGCONT');
  });
});
