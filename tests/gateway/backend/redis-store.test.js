'use strict';

// The shared store when Redis stops answering but keeps its connection (a real redis-server
// stopped with SIGSTOP, as a frozen host or a black-holed route): marked unresponsive on /health
// within seconds, nothing piles up in ioredis or the socket, every query answered once and on
// time from the backend and the process's cache; SIGCONT and it is connected again and written
// to. The long version (400 queries/s for 40 s, RSS measured) is tests/stress/redis-freeze.test.js.

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { startRedis } = require('../../helpers/redis');
const { sendAtRate, routerFigures } = require('../../helpers/open-loop');
const { RedisStore, MAX_IN_FLIGHT } = require('../../../gateway/backend/redis-store');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const CALLERS = 300;
const RATE = 150;

/**
 * A customer API answering ~1 KB; every 7th request is a 500 (stale answers or failures for those).
 * 7, prime to the number of callers, so that the failures fall on every caller in turn.
 */
async function api() {
  const b = await startTestBackend((req, res) => {
    if (b.requests.length % 7 === 0) {
      res.statusCode = 500;
      res.end('down');
      return;
    }
    const clid = /clid":"(\d+)/.exec(req.body)?.[1];
    res.end(JSON.stringify({ vars: { 1: `live-${clid}` }, ecc: { 'user.notes': 'n'.repeat(200), 'user.more': 'm'.repeat(200) } }));
  });
  return b;
}

async function health(stack) {
  return (await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json()).backend.cache;
}

async function outcomes(stack) {
  const text = await stack.gw.metrics();
  const out = {};
  for (const m of text.matchAll(/^ged145_queries_total\{subtype="[^"]*",outcome="([^"]+)"\} (\d+)/gm)) out[m[1]] = (out[m[1]] || 0) + Number(m[2]);
  return out;
}

/** Polls /health until its store state is `state`; ms it took, or null after withinMs. */
async function storeBecomes(stack, state, withinMs) {
  const t0 = performance.now();
  while (performance.now() - t0 < withinMs) {
    if ((await health(stack)).store === state) return Math.round(performance.now() - t0);
    await wait(50);
  }
  return null;
}

describe('the shared cache store when Redis freezes', function () {
  this.timeout(40_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  it('at most 1,000 commands and 8 MiB of values outstanding, however fast they come; dropped with the connection once unresponsive', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const store = new RedisStore(redis.url);
    cleanup.push(() => store.close());
    const until = performance.now() + 5000;
    while (store.state !== 'connected' && performance.now() < until) await wait(20);
    redis.freeze();
    cleanup.push(() => redis.thaw());
    const big = 'x'.repeat(10 * 1024);
    for (let i = 0; i < 3000; i++) store.write(`big:${i}`, big, 60_000);
    assert.ok(store.inFlightBytes <= 8 * 1024 * 1024 && store.inFlight < 820, `${store.inFlight} writes of 10 KB, ${store.inFlightBytes} bytes`);
    for (let i = 0; i < 3000; i++) store.write(`small:${i}`, 'x', 60_000);
    const reads = await Promise.all(Array.from({ length: 100 }, (_, i) => store.read(`small:${i}`)));
    assert.equal(store.inFlight, MAX_IN_FLIGHT);
    assert.equal(store.redis.commandQueue.length, MAX_IN_FLIGHT, 'what waits in ioredis is what the store let through');
    assert.deepEqual(new Set(reads), new Set([undefined]), 'a read past the bound is no wait: the query goes on without it');
    // Traffic goes on: timeouts in a row over 200 ms, not one burst of them (which a stall of this process could make).
    const down = performance.now() + 3000;
    for (let i = 0; store.state !== 'unresponsive' && performance.now() < down; i++) {
      store.write(`trickle:${i}`, 'x', 60_000);
      await wait(50);
    }
    assert.equal(store.state, 'unresponsive');
    const dropped = performance.now() + 1000;
    while (store.redis.commandQueue.length > 0 && performance.now() < dropped) await wait(10);
    assert.deepEqual([store.inFlight, store.inFlightBytes, store.redis.commandQueue.length], [0, 0, 0], 'dropped with the connection');
    store.write('after', 'x', 60_000);
    assert.equal(store.inFlight, 0, 'nothing is sent to an unresponsive store');
  });

  it('150 queries/s on a frozen Redis: unresponsive within 2 s, nothing piles up, every query answered once and on time; back after SIGCONT', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const b = await api();
    cleanup.push(() => b.close());
    const stack = await startStack({
      backendUrl: b.url,
      gateway: { cache: { ttlMs: 300, staleIfErrorMs: 60_000, key: ['clid'], store: redis.url } },
    });
    cleanup.push(() => stack.stop());
    const c = await WireClient.connect(stack.port);
    cleanup.push(() => c.close());
    await c.open();
    assert.notEqual(await storeBecomes(stack, 'connected', 5000), null, 'connected at start');
    const fields = (i) => ({ subtype: 'cust', clid: String(5551000000 + ((i * 7919) % CALLERS)) });

    // Warm: the first second of a cold process (no warm-up in tests) is slow on a busy machine.
    await routerFigures(c, await sendAtRate(c, { rate: 100, durationMs: 2000, fields }));
    const before = await outcomes(stack);
    redis.freeze();
    cleanup.push(() => redis.thaw()); // a frozen server cannot be waited for
    const frozenAt = performance.now();
    const load = sendAtRate(c, {
      rate: RATE, durationMs: 3000, fields: (i) => fields(i + 200), firstId: 10_000,
    });
    const downAfterMs = await storeBecomes(stack, 'unresponsive', 2000);
    // What waits in ioredis for a reply, and in the socket for Redis to read it.
    const { store } = stack.gateway.backend.cache;
    let queued = 0;
    let buffered = 0;
    while (performance.now() - frozenAt < 3000) {
      const client = store?.redis;
      queued = Math.max(queued, client ? client.commandQueue.length : 0);
      buffered = Math.max(buffered, client?.stream ? client.stream.writableLength : 0);
      await wait(25);
    }
    const during = await routerFigures(c, await load);
    const after = await outcomes(stack);
    const mix = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] || 0)]).filter(([, n]) => n > 0));
    assert.notEqual(downAfterMs, null, `the store shown unresponsive within 2 s of the freeze: ${JSON.stringify(await health(stack))}`);
    assert.ok(queued <= 100 && buffered <= 256 * 1024, `commands waiting in ioredis at most ${queued}, socket buffer at most ${buffered} bytes`);
    assert.deepEqual([during.missing, during.duplicated], [0, 0], JSON.stringify(during));
    assert.ok(during.late <= during.sent / 50, `answered before 300 ms: ${JSON.stringify(during)}`);
    assert.ok(mix.ok > 0 && mix.stale > 0, `backend and stale answers while Redis is frozen: ${JSON.stringify(mix)}`);
    assert.match(await stack.gw.metrics(), /^ged145_cache_store_up\{store="redis"\} 0$/m);
    assert.ok(stack.log.lines.some((l) => /cache store \(Redis\) unresponsive: \d+ commands in a row not answered within 100 ms/.test(l.message)));

    redis.thaw();
    const backAfterMs = await storeBecomes(stack, 'connected', 5000);
    assert.notEqual(backAfterMs, null, 'connected again after SIGCONT');
    const Redis = require('ioredis');
    const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    cleanup.push(() => r.disconnect());
    const keysBefore = await r.dbsize();
    // Two new callers: at most one of two requests in a row meets the API's 500.
    c.query(99_998, { subtype: 'cust', clid: '5559999998' });
    c.query(99_999, { subtype: 'cust', clid: '5559999999' });
    const replies = await Promise.all([99_998, 99_999].map((id) => c.waitFor((m) => m.invokeId === id)));
    const answered = replies.filter((m) => m.type === 'QUERY_RESP').length;
    assert.ok(answered >= 1);
    await redis.waitForKeys(keysBefore + answered);
    assert.equal(await r.dbsize(), keysBefore + answered, 'written to again');
    assert.match(await stack.gw.metrics(), /^ged145_cache_store_up\{store="redis"\} 1$/m);
    // The figures, for the record.
    process.stdout.write(`      frozen Redis, ${RATE} queries/s: unresponsive after ${downAfterMs} ms; router ${JSON.stringify(during)}; `
      + `outcomes ${JSON.stringify(mix)}; ioredis queue <= ${queued}, socket buffer <= ${buffered} B; connected ${backAfterMs} ms after SIGCONT\n`);
  });
});
