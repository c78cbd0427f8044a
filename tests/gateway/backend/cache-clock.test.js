'use strict';

// The answer cache's ages against wall clocks that step and differ (gateway children under
// libfaketime, tests/helpers/faketime.js): a 60-minute step back does not make an expired answer
// fresh, and side B whose clock runs 10 s behind side A reads A's entries in the shared Redis as
// A meant them (fresh, then stale while the backend is down), and deletes none of them.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { WireClient } = require('../../helpers/wire');
const { spawnCli } = require('../../helpers/spawn');
const { tmpDir } = require('../../helpers/tmp');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { startRedis } = require('../../helpers/redis');
const { offsetClock, steppableClock, clockOffsetS } = require('../../helpers/faketime');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** A backend answering live-N (N: its request count), or 500 while `down`. */
async function switchable() {
  const b = await startTestBackend((req, res) => {
    if (b.down) {
      res.statusCode = 500;
      res.end('down');
      return;
    }
    res.end(JSON.stringify({ vars: { 1: `live-${b.requests.length}` } }));
  });
  b.down = false;
  return b;
}

/** A gateway child with config `settings` and extra env; {child, port, adminPort}. */
async function gatewayChild(settings, env) {
  const file = path.join(tmpDir(), 'gateway.json');
  fs.writeFileSync(file, JSON.stringify(settings));
  const child = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json'], { env });
  const ready = await child.ready();
  return { child, port: Number(ready.port), adminPort: Number(ready.adminPort) };
}

async function session(port) {
  const c = await WireClient.connect(port);
  await c.open();
  let id = 100;
  c.ask = async (fields) => {
    const invokeId = ++id;
    c.query(invokeId, fields);
    return c.waitFor((m) => m.invokeId === invokeId);
  };
  return c;
}

async function outcomesOf(adminPort) {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const out = {};
  for (const m of text.matchAll(/^ged145_queries_total\{subtype="[^"]*",outcome="([^"]+)"\} (\d+)/gm)) out[m[1]] = (out[m[1]] || 0) + Number(m[2]);
  return out;
}

describe('cache ages when wall clocks step and differ (libfaketime)', function () {
  this.timeout(30_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });
  function stopChild(child) {
    cleanup.push(async () => {
      child.killGroup('SIGKILL');
      await child.exited;
    });
  }

  it('a 60-minute step back: a ttlMs 2000 answer is not fresh 2.5 s later; a stale one still answers while the backend fails', async () => {
    const b = await switchable();
    cleanup.push(() => b.close());
    const clock = steppableClock();
    const { child, port, adminPort } = await gatewayChild({
      backend: { url: b.url }, cache: { ttlMs: 2000, staleIfErrorMs: 3_600_000, key: ['clid'] }, breaker: false,
    }, clock.env);
    stopChild(child);
    const c = await session(port);
    cleanup.push(() => c.close());
    assert.ok(Math.abs(await clockOffsetS(adminPort)) <= 1, 'the child\'s clock is right at first');

    const storedAt = performance.now();
    const first = await c.ask({ subtype: 'cust', clid: '5551001' });
    const other = await c.ask({ subtype: 'cust', clid: '5551002' });
    assert.deepEqual([first.vars[1], other.vars[1]], ['live-1', 'live-2']);
    assert.equal((await c.ask({ subtype: 'cust', clid: '5551001' })).vars[1], 'live-1', 'fresh: from the cache');
    clock.step('-3600s');
    const until = performance.now() + 5000;
    let offset = await clockOffsetS(adminPort);
    while (offset > -3590 && performance.now() < until) {
      await wait(100);
      offset = await clockOffsetS(adminPort);
    }
    assert.ok(offset <= -3590 && offset >= -3610, `the child's clock stepped back an hour: ${offset} s`);
    await wait(Math.max(0, storedAt + 2500 - performance.now()));

    const later = await c.ask({ subtype: 'cust', clid: '5551001' });
    assert.equal(later.vars[1], 'live-3', '2.5 s after it was stored, a ttlMs 2000 answer is not fresh: the backend is asked');
    assert.equal(b.requests.length, 3);
    b.down = true;
    const stale = await c.ask({ subtype: 'cust', clid: '5551002' });
    assert.deepEqual([stale.type, stale.vars[1]], ['QUERY_RESP', 'live-2'], 'past ttlMs, within staleIfErrorMs: stale while the backend fails');
    const o = await outcomesOf(adminPort);
    assert.deepEqual([o.cached, o.stale, o.ok], [1, 1, 3], JSON.stringify(o));
  });

  it('side B 10 s behind side A on one Redis: B answers from A\'s entries, fresh and then stale, while the backend is down, and deletes none', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const b = await switchable();
    cleanup.push(() => b.close());
    const settings = {
      backend: { url: b.url },
      cache: { ttlMs: 300, staleIfErrorMs: 60_000, key: ['clid'], store: redis.url },
      routes: { long: { cache: { ttlMs: 20_000 } }, short: { cache: true } },
    };
    const sideA = await startStack({
      backendUrl: b.url, gateway: { cache: settings.cache, routes: settings.routes },
    });
    cleanup.push(() => sideA.stop());
    const sideB = await gatewayChild(settings, offsetClock('-10s'));
    stopChild(sideB.child);
    const offset = await clockOffsetS(sideB.adminPort);
    assert.ok(offset <= -9 && offset >= -11, `side B's clock is 10 s behind: ${offset} s`);
    const until = performance.now() + 5000;
    const connected = async (adminPort) => (await (await fetch(`http://127.0.0.1:${adminPort}/health`)).json()).backend.cache.store === 'connected';
    while (!(await connected(sideA.adminPort) && await connected(sideB.adminPort)) && performance.now() < until) await wait(50);

    const a = await session(sideA.port);
    cleanup.push(() => a.close());
    const fromA = [await a.ask({ subtype: 'long', clid: '5552001' }), await a.ask({ subtype: 'short', clid: '5552002' })].map((r) => r.vars[1]);
    assert.deepEqual(fromA, ['live-1', 'live-2']);
    await wait(600); // written to Redis; the short route's entry is past its ttlMs
    b.down = true;
    const onB = await session(sideB.port);
    cleanup.push(() => onB.close());
    const fresh = await onB.ask({ subtype: 'long', clid: '5552001' });
    const stale = await onB.ask({ subtype: 'short', clid: '5552002' });
    assert.deepEqual([fresh.type, fresh.vars?.[1], stale.type, stale.vars?.[1]], ['QUERY_RESP', 'live-1', 'QUERY_RESP', 'live-2'],
      `side B answered from side A's entries: ${JSON.stringify([fresh, stale])}`);
    assert.equal(b.requests.length, 3, 'the fresh one without the backend; the stale one after the backend failed');
    const o = await outcomesOf(sideB.adminPort);
    assert.deepEqual([o.cached, o.stale], [1, 1], JSON.stringify(o));

    const Redis = require('ioredis');
    const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    cleanup.push(() => r.disconnect());
    const keys = await r.keys('ged145:answer:*');
    assert.equal(keys.length, 2, 'both of side A\'s entries are still there');
    for (const k of keys) assert.ok(await r.pttl(k) > 0);
    assert.doesNotMatch(sideB.child.out + sideB.child.err, /no cached answer/);
  });
});
