'use strict';

// Calls keep routing while the backend degrades: fallback answers, the answer cache with
// serve-stale (and a real redis-server as the shared store), the circuit breaker per origin,
// several backends and the retry of requests that never reached one. Real sockets throughout.

const assert = require('node:assert/strict');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { startRedis } = require('../../helpers/redis');
const { cacheKey, KEY_PREFIX } = require('../../../gateway/backend/cache');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** A backend whose behaviour the test switches: 'ok', '500', '422', 'hang', 'reset'. */
async function switchable() {
  const b = await startTestBackend((req, res, entry) => {
    switch (b.mode) {
      case '500': res.statusCode = 500; res.end('down'); return;
      case '422': res.statusCode = 422; res.end('{"error":"no such account"}'); return;
      case 'hang': return;
      case 'reset': req.socket.destroy(); return;
      default: res.end(JSON.stringify({ vars: { 1: `live-${b.requests.length}` }, ecc: { 'user.src': entry.url } }));
    }
  });
  b.mode = 'ok';
  return b;
}

/** The Redis key under which stack's gateway keeps the answer to {subtype, clid}. */
function redisKey(stack, subtype, clid) {
  const { config } = stack.gateway;
  const route = config.compiledRoutes.get(subtype);
  return KEY_PREFIX + cacheKey({ subtype, clid }, ['clid'], (route === undefined ? config.availability : route).cacheScope);
}

/** Waits until every stack's shared store is connected. */
async function storesConnected(...stacks) {
  const until = Date.now() + 5000;
  while (!stacks.every((s) => s.gateway.backend.cache.store.state === 'connected') && Date.now() < until) await wait(20);
}

async function outcomes(stack) {
  const text = await stack.gw.metrics();
  const out = {};
  for (const m of text.matchAll(/^ged145_queries_total\{subtype="[^"]*",outcome="([^"]+)"\} (\d+)/gm)) out[m[1]] = (out[m[1]] || 0) + Number(m[2]);
  return out;
}

async function session(stack) {
  const c = await WireClient.connect(stack.port);
  await c.open();
  let id = 100;
  c.ask = async (fields) => {
    const invokeId = ++id;
    const t0 = Date.now();
    c.query(invokeId, fields);
    const r = await c.waitFor((m) => m.invokeId === invokeId);
    r.tookMs = Date.now() - t0;
    return r;
  };
  return c;
}

describe('availability', function () {
  this.timeout(30_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });
  async function stackWith(backendUrl, gateway) {
    const stack = await startStack({ backendUrl, gateway });
    cleanup.push(() => stack.stop());
    const c = await session(stack);
    cleanup.push(() => c.close());
    return { stack, c };
  }

  describe('fallback', () => {
    it('a failing backend is answered QUERY_RESP status 0 with the fallback tags, at once, counted as fallback', async () => {
      const b = await switchable();
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, { fallback: { vars: { 2: 'default' }, ecc: { 'user.mode': 'degraded' } }, 'breaker.enabled': false });
      assert.deepEqual((await c.ask({ subtype: 's', clid: '1' })).vars, { 1: 'live-1' });
      b.mode = '500';
      const r = await c.ask({ subtype: 's', clid: '1' });
      assert.deepEqual([r.type, r.status, r.vars, r.ecc], ['QUERY_RESP', 0, { 2: 'default' }, { 'user.mode': 'degraded' }]);
      assert.ok(r.tookMs < 150, `known failure answered at once (${r.tookMs} ms)`);
      b.mode = 'reset';
      assert.equal((await c.ask({ subtype: 's' })).vars[2], 'default');
      b.mode = 'hang';
      const late = await c.ask({ subtype: 's' });
      assert.equal(late.vars[2], 'default', 'a silent backend gets the fallback at the deadline');
      assert.ok(late.tookMs >= 240, `${late.tookMs} ms`);
      const o = await outcomes(stack);
      assert.equal(o.fallback, 3);
      assert.equal(o.ok, 1);
    });

    it('the log says the router gets the fallback, says so again at info as soon as the backend is back, and counts fallback answers as answered', async () => {
      const b = await switchable();
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, { fallback: { vars: { 2: 'default' } }, 'breaker.enabled': false });
      assert.deepEqual((await c.ask({ subtype: 's', clid: '1' })).vars, { 1: 'live-1' });
      b.mode = '500';
      for (let i = 0; i < 6; i++) assert.equal((await c.ask({ subtype: 's', clid: '1' })).vars[2], 'default');
      const failing = stack.log.lines.filter((l) => /^backend failing/.test(l.message));
      assert.equal(failing.length, 1);
      assert.match(failing[0].message, /; the router gets the fallback answer$/);
      assert.equal(failing[0].level, 'warn');
      b.mode = 'ok';
      await c.ask({ subtype: 's', clid: '1' });
      const back = stack.log.lines.filter((l) => /^backend reachable again: http:\/\/127\.0\.0\.1:\d+ \(subtype \w+\)$/.test(l.message));
      assert.equal(back.length, 1, 'logged when it happened, not at the next line 10 s later');
      assert.equal(back[0].level, 'info');
      c.close();
      for (let i = 0; i < 100 && !stack.log.lines.some((l) => l.message === 'router disconnected'); i++) await new Promise((r) => setTimeout(r, 20));
      const closed = stack.log.lines.find((l) => l.message === 'router disconnected');
      assert.deepEqual([closed.queries, closed.ok, closed.failed], [8, 8, 0], 'a fallback answer is an answer');
      assert.deepEqual(closed.outcomes, { ok: 2, fallback: 6 });
    });

    it('a 4xx stays E_AG_HOST_ERROR2 unless fallback.on4xx; a route may set its own fallback or none', async () => {
      const b = await switchable();
      cleanup.push(() => b.close());
      b.mode = '422';
      const { stack, c } = await stackWith(b.url, {
        fallback: { vars: { 2: 'default' } },
        'breaker.enabled': false,
        routes: { strict: { fallback: null }, lenient: { fallback: { vars: { 3: 'route' }, on4xx: true } } },
      });
      const plain = await c.ask({ subtype: 's' });
      assert.deepEqual([plain.type, plain.status, plain.error], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR2, 'no such account']);
      assert.deepEqual((await c.ask({ subtype: 'lenient' })).vars, { 3: 'route' });
      b.mode = '500';
      assert.equal((await c.ask({ subtype: 'strict' })).status, STATUS.E_AG_HOST_ERROR1);
      assert.deepEqual((await c.ask({ subtype: 'other' })).vars, { 2: 'default' });
      // The session's close line counts the backend's "no" apart: not ok, not failed.
      c.close();
      for (let i = 0; i < 100 && !stack.log.lines.some((l) => l.message === 'router disconnected'); i++) await new Promise((r) => setTimeout(r, 20));
      const closed = stack.log.lines.find((l) => l.message === 'router disconnected');
      assert.deepEqual([closed.queries, closed.ok, closed.appError, closed.failed], [4, 2, 1, 1]);
    });
  });

  describe('answer cache', () => {
    it('a fresh entry answers without the backend; after ttlMs a failing backend is answered from the stale entry', async () => {
      const b = await switchable();
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, {
        cache: { ttlMs: 300, staleIfErrorMs: 60_000, key: ['subtype', 'clid'] }, fallback: { vars: { 1: 'fallback' } }, 'breaker.enabled': false,
      });
      const first = await c.ask({ subtype: 'cust', clid: '5551' });
      const second = await c.ask({ subtype: 'cust', clid: '5551' });
      assert.deepEqual(second.vars, first.vars);
      assert.equal(b.requests.length, 1, 'the second came from the cache');
      await c.ask({ subtype: 'cust', clid: '5552' });
      assert.equal(b.requests.length, 2, 'another CLID is another key');
      await wait(350);
      b.mode = '500';
      const stale = await c.ask({ subtype: 'cust', clid: '5551' });
      assert.deepEqual(stale.vars, first.vars, 'stale before fallback');
      assert.equal(b.requests.length, 3, 'an expired entry asks the backend first');
      assert.deepEqual((await c.ask({ subtype: 'cust', clid: '9999' })).vars, { 1: 'fallback' });
      const text = await stack.gw.metrics();
      assert.match(text, /^ged145_cache_lookups_total\{result="hit"\} 1$/m);
      assert.match(text, /^ged145_cache_lookups_total\{result="stale"\} 1$/m);
      assert.match(text, /^ged145_cache_lookups_total\{result="miss"\} 4$/m);
      const o = await outcomes(stack);
      assert.deepEqual([o.cached, o.stale, o.fallback], [1, 1, 1]);
    });

    it('a query missing a key field, or with an empty one, bypasses the cache; the route is always part of the key', async () => {
      const b = await switchable();
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, { cache: { key: ['subtype', 'clid'] }, 'breaker.enabled': false });
      const one = await c.ask({ subtype: 's', ced: '1' });
      const two = await c.ask({ subtype: 's', ced: '2' });
      const empty = await c.ask({ subtype: 's', clid: '', ced: '3' });
      assert.equal(b.requests.length, 3, 'no CLID, or an empty one: each caller asks the backend');
      assert.notDeepEqual(two.vars, one.vars, "the second caller did not get the first one's answer");
      assert.notDeepEqual(empty.vars, two.vars);
      assert.match(await stack.gw.metrics(), /^ged145_cache_lookups_total\{result="bypass"\} 3$/m);
      const other = await stackWith(b.url, { cache: { key: ['clid'] }, 'breaker.enabled': false });
      const acct = await other.c.ask({ subtype: 'acct', clid: '5551' });
      const balance = await other.c.ask({ subtype: 'balance', clid: '5551' });
      assert.equal(b.requests.length, 5, "key ['clid']: subtype balance is not answered with acct's cached answer");
      assert.notDeepEqual(balance.vars, acct.vars);
      assert.equal((await other.c.ask({ subtype: 'acct', clid: '5551' })).vars[1], acct.vars[1], 'the same route and CLID is a hit');
      assert.equal(b.requests.length, 5);
    });

    it('a value in Redis that is no cached answer is ignored, deleted, logged, and the backend\'s answer takes its place', async () => {
      const redis = await startRedis();
      cleanup.push(() => redis.stop());
      const b = await switchable();
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, { cache: { key: ['clid'], store: redis.url } });
      await storesConnected(stack);
      const Redis = require('ioredis');
      const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
      cleanup.push(() => r.disconnect());
      // Each with an expiry (PX) but no cached answer, and one cached answer that never expires.
      const bad = ['null', '{"answer": null, "keepMs": 60000}', '[1,2]', 'not json', '{"answer": {"vars": {"1": "no keepMs"}}}',
        JSON.stringify({ answer: { vars: { 1: 'no expiry' } }, keepMs: 60_000 })];
      for (const [i, value] of bad.entries()) {
        const key = redisKey(stack, 's', `555${i}`);
        if (i < bad.length - 1) await r.set(key, value, 'PX', 60_000);
        else await r.set(key, value);
        const reply = await c.ask({ subtype: 's', clid: `555${i}` });
        assert.deepEqual([reply.type, reply.status], ['QUERY_RESP', 0], `value ${value}: answered`);
        assert.equal(b.requests.length, i + 1, `value ${value}: from the backend`);
        await wait(50); // the cache writes Redis in the background
        const now = JSON.parse(await r.get(key));
        assert.equal(now.answer.vars[1], reply.vars[1], `value ${value}: replaced by the backend's answer`);
        assert.equal(now.keepMs, 30_000 + 3_600_000);
        assert.ok(await r.pttl(key) > 0, 'stored with an expiry');
      }
      assert.ok(stack.log.lines.some((l) => /cache store \(Redis\) held a value that is no cached answer/.test(l.message)));
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.cache.entries, bad.length);
      assert.ok(health.backend.cache.bytes > 0 && health.backend.cache.bytes <= health.backend.cache.maxBytes, JSON.stringify(health.backend.cache));
      assert.match(await stack.gw.metrics(), new RegExp(`^ged145_cache_entries ${bad.length}$`, 'm'));
    });

    it('an entry read from Redis expires from the process with its time in Redis, not never', async () => {
      const redis = await startRedis();
      cleanup.push(() => redis.stop());
      const b = await switchable();
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, { cache: { key: ['clid'], store: redis.url, ttlMs: 300, staleIfErrorMs: 0 }, 'breaker.enabled': false });
      await storesConnected(stack);
      const Redis = require('ioredis');
      const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
      cleanup.push(() => r.disconnect());
      // Side A stored this 100 ms ago, for 300 ms: Redis keeps it for 200 ms more.
      const fromA = JSON.stringify({ answer: { vars: { 1: 'from side A' } }, keepMs: 300 });
      const key = redisKey(stack, 's', '5559');
      await r.set(key, fromA, 'PX', 200);
      assert.equal((await c.ask({ subtype: 's', clid: '5559' })).vars[1], 'from side A');
      const left = stack.gateway.backend.cache.local.getRemainingTTL(key.slice(KEY_PREFIX.length));
      assert.ok(left > 0 && left <= 200, `the process keeps it for what is left of its time: ${left} ms`);
      await r.flushall();
      await wait(300);
      const later = await c.ask({ subtype: 's', clid: '5559' });
      assert.match(later.vars[1], /^live-/, 'past its time, the process\'s copy no longer answers');
    });

    it('a shared Redis store: side B answers from what side A stored; a Redis outage never fails a query', async () => {
      const redis = await startRedis();
      cleanup.push(() => redis.stop());
      const b = await switchable();
      cleanup.push(() => b.close());
      const cache = { ttlMs: 60_000, key: ['clid'], store: redis.url };
      const a = await stackWith(b.url, { cache });
      const sideB = await stackWith(b.url, { cache });
      await storesConnected(a.stack, sideB.stack);
      const fromA = await a.c.ask({ subtype: 'x', clid: '5553' });
      await redis.waitForKeys(1); // the write to Redis is in the background
      const fromB = await sideB.c.ask({ subtype: 'x', clid: '5553' });
      assert.deepEqual(fromB.vars, fromA.vars);
      assert.equal(b.requests.length, 1, 'side B did not call the backend');
      await redis.stop();
      await wait(200);
      for (let i = 0; i < 5; i++) {
        const r = await sideB.c.ask({ subtype: 'x', clid: `77${i}` });
        assert.deepEqual([r.type, r.status], ['QUERY_RESP', 0], 'answered from the backend');
      }
      const health = await (await fetch(`http://127.0.0.1:${sideB.stack.adminPort}/health`)).json();
      assert.equal(health.backend.cache.store, 'unreachable');
      assert.ok(sideB.stack.log.lines.some((l) => /cache store \(Redis\) unreachable/.test(l.message)));
      assert.match(await sideB.stack.gw.metrics(), /^ged145_cache_store_errors_total [1-9]/m);
    });
  });

  describe('shared store, caller data', () => {
    it('under log.redact a Redis key is logged as a hash, never with the caller\'s CLID', async () => {
      const redis = await startRedis();
      cleanup.push(() => redis.stop());
      const b = await switchable();
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, { cache: { store: redis.url }, 'log.redact': true });
      await storesConnected(stack);
      const Redis = require('ioredis');
      const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
      cleanup.push(() => r.disconnect());
      await r.set(redisKey(stack, 's', '5559876543'), 'not json', 'PX', 60_000);
      assert.equal((await c.ask({ subtype: 's', clid: '5559876543' })).type, 'QUERY_RESP');
      const line = stack.log.lines.find((l) => /held a value that is no cached answer/.test(l.message));
      assert.ok(line);
      assert.match(line.key, /^ged145:answer:sha256:[0-9a-f]{16}$/);
      assert.ok(!JSON.stringify(stack.log.lines).includes('5559876543'), 'the CLID is in no log line');
    });
  });

  describe('shared store, backend down', () => {
    it('two gateways on one redis-server: with the backend down, side B answers stale from the entry side A stored a second earlier', async () => {
      const redis = await startRedis();
      cleanup.push(() => redis.stop());
      const b = await switchable();
      cleanup.push(() => b.close());
      const cache = { ttlMs: 200, staleIfErrorMs: 60_000, store: redis.url };
      const a = await stackWith(b.url, { cache });
      const sideB = await stackWith(b.url, { cache });
      await storesConnected(a.stack, sideB.stack);
      const fromA = await a.c.ask({ subtype: 'cust', clid: '5559001' });
      assert.equal(fromA.type, 'QUERY_RESP');
      await wait(1000);
      b.mode = '500';
      const fromB = await sideB.c.ask({ subtype: 'cust', clid: '5559001' });
      assert.deepEqual([fromB.type, fromB.vars], ['QUERY_RESP', fromA.vars], 'answered stale from side A\'s entry');
      assert.deepEqual(sideB.stack.log.lines.filter((l) => /no cached answer/.test(l.message)), []);
    });
  });

  describe('circuit breaker', () => {
    it('with one origin an open circuit still sends its calls: with minOpenMs 0 the first answer closes it, nothing is refused', async () => {
      // minOpenMs 0: the default (5 s) keeps a one-origin circuit open that long (rate-limit.test.js has it).
      const b = await switchable();
      cleanup.push(() => b.close());
      b.mode = 'hang';
      // Three hanging queries end within one 1 s window: with minimumCalls 3, 3 of 3 gave no answer in time.
      const { stack, c } = await stackWith(b.url, { breaker: { minimumCalls: 3, minOpenMs: 0 } });
      for (let i = 0; i < 3; i++) assert.equal((await c.ask({ subtype: 's' })).status, STATUS.E_AG_HOST_ERROR1);
      let health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.circuits[b.url].state, 'open');
      assert.deepEqual(health.backend.circuits[b.url].routes.map((r) => [r.route, r.state, r.openedOn]), [['s', 'open', 'slow']]);
      assert.match(await stack.gw.metrics(), /^ged145_backend_circuit_state\{origin="http:\/\/127\.0\.0\.1:\d+"\} 2$/m);
      b.mode = 'ok';
      assert.equal((await c.ask({ subtype: 's' })).status, 0, 'sent although the circuit is open: no other origin could take it');
      assert.equal(b.requests.length, 4);
      health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.circuits[b.url].state, 'closed', 'its answer closed the circuit');
      const changes = stack.log.lines.filter((l) => /backend circuit (open|half-open|closed)/.test(l.message));
      assert.deepEqual(changes.map((l) => l.message.split(' ')[2]), ['open', 'closed']);
      assert.match(changes[0].message, /^backend circuit open for http:\/\/127\.0\.0\.1:\d+ \(subtype s\): most of its recent queries got no answer in time \(last: deadline\)/);
      assert.deepEqual(changes.map((l) => l.level), ['warn', 'info'], 'good news is info');
    });

    it('one failing subtype never costs another: each route has its own circuit on the origin', async () => {
      // Half the traffic to a subtype the backend answers 500: with one circuit per origin
      // that circuit opened and the healthy subtype got "circuit open" for most of its queries.
      const b = await startTestBackend((req, res) => {
        if (req.url.endsWith('/bad')) { res.statusCode = 500; res.end('down'); return; }
        res.end('{"vars":{"1":"x"}}');
      });
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, {});
      const got = { good: 0, bad: 0 };
      for (let i = 0; i < 60; i++) {
        const subtype = i % 2 ? 'bad' : 'good';
        if ((await c.ask({ subtype })).status === 0) got[subtype]++;
      }
      assert.deepEqual(got, { good: 30, bad: 0 });
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      const routes = Object.fromEntries(health.backend.circuits[b.url].routes.map((r) => [r.route, r.state]));
      assert.deepEqual(routes, { good: 'closed', bad: 'open' });
      assert.equal(b.requests.length, 60, 'with one origin, every query was sent');
    });

    it('a route\'s breaker settings are its own, and breaker false keeps its failures out of every circuit', async () => {
      const b = await startTestBackend((req, res) => {
        if (!req.url.endsWith('/good')) { res.statusCode = 500; res.end('down'); return; }
        res.end('{"vars":{"1":"x"}}');
      });
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, {
        routes: { strict: { breaker: { minimumCalls: 3 } }, off: { breaker: false } },
      });
      for (let i = 0; i < 3; i++) await c.ask({ subtype: 'strict' });
      for (let i = 0; i < 30; i++) await c.ask({ subtype: 'off' });
      for (let i = 0; i < 3; i++) assert.equal((await c.ask({ subtype: 'good' })).status, 0);
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      const routes = Object.fromEntries(health.backend.circuits[b.url].routes.map((r) => [r.route, r.state]));
      assert.deepEqual(routes, { strict: 'open', good: 'closed' }, 'strict opened on its own 3 calls; off has no circuit');
    });

    it('a slow but alive backend is no failure: half the calls past the deadline leave the circuit closed', async () => {
      // Answers alternately in 150 and 350 ms, the deadline 250 ms: half of them in time.
      let n = 0;
      const b = await startTestBackend((req, res) => setTimeout(() => res.end('{"vars":{"1":"x"}}'), n++ % 2 ? 350 : 150));
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, {});
      const ids = Array.from({ length: 60 }, (_, i) => 2000 + i);
      for (const id of ids) {
        c.query(id, { subtype: 's' });
        await wait(10);
      }
      await c.until(() => (ids.every((id) => c.messages.some((m) => m.invokeId === id)) ? true : undefined), 5000, 'every reply');
      const replies = c.messages.filter((m) => ids.includes(m.invokeId));
      assert.equal(replies.length, 60, 'each query answered once');
      // About 30 in time on a quiet machine; fewer on a busy one, whose pauses push more past the
      // deadline: the circuit must stay closed either way, for a slow answer is no failure.
      const answered = replies.filter((m) => m.type === 'QUERY_RESP').length;
      assert.ok(answered > 0, `${answered} of 60 answered`);
      assert.ok(replies.every((m) => m.type === 'QUERY_RESP' || m.status === STATUS.E_AG_HOST_ERROR1), JSON.stringify(replies.map((m) => m.status)));
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.circuits[b.url].state, 'closed');
    });

    it('stays closed while failures are under failureRatio, however many come in a row', async () => {
      const b = await switchable();
      cleanup.push(() => b.close());
      const { c } = await stackWith(b.url, {});
      for (let i = 0; i < 30; i++) assert.equal((await c.ask({ subtype: 's' })).status, 0);
      b.mode = '500';
      for (let i = 0; i < 15; i++) assert.equal((await c.ask({ subtype: 's' })).status, STATUS.E_AG_HOST_ERROR1);
      b.mode = 'ok';
      assert.equal((await c.ask({ subtype: 's' })).status, 0, '15 failures after 30 answers (33 %) do not open it');
      assert.equal(b.requests.length, 46, 'every query reached the backend');
    });

    it('with another origin: a failing route moves there, probes after halfOpenAfterMs, 1.5 times longer after a failed probe', async () => {
      const one = await switchable();
      const two = await switchable();
      cleanup.push(() => one.close(), () => two.close());
      one.mode = '500';
      const { stack, c } = await stackWith(one.url, { 'backend.url': [one.url, two.url], breaker: { minimumCalls: 3, halfOpenAfterMs: 300 } });
      for (let i = 0; i < 3; i++) await c.ask({ subtype: 's' });
      assert.equal(one.requests.length, 3);
      assert.equal((await c.ask({ subtype: 's' })).status, 0, 'open: the next origin takes the call');
      assert.equal((await c.ask({ subtype: 'other' })).status, STATUS.E_AG_HOST_ERROR1, 'another subtype still goes to the first origin');
      assert.deepEqual([one.requests.length, two.requests.length], [4, 1]);
      await wait(330);
      await c.ask({ subtype: 's' }); // the probe, fails: open for 450 ms
      assert.equal(one.requests.length, 5, 'the probe went out');
      await wait(330);
      assert.equal((await c.ask({ subtype: 's' })).status, 0);
      assert.equal(one.requests.length, 5, '330 ms later the first origin is still skipped (450 ms this time)');
      await wait(170);
      one.mode = 'ok';
      await c.ask({ subtype: 's' });
      assert.equal(one.requests.length, 6, 'the second probe');
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.circuits[one.url].routes.find((r) => r.route === 's').state, 'closed');
      assert.ok(stack.log.lines.some((l) => /\(subtype s\): the probe failed \(last: http_500\); next probe in 450 ms/.test(l.message)));
    });

    it('a request that waited for a free backend connection past its deadline does not count against the backend', async () => {
      // One connection, a backend that answers in 150 ms: of 8 queries at once, most wait in the
      // pool and miss the 250 ms deadline without ever being sent. The backend is healthy.
      const b = await startTestBackend((req, res) => setTimeout(() => res.end('{"vars":{"1":"x"}}'), 150));
      cleanup.push(() => b.close());
      const { stack, c } = await stackWith(b.url, { 'backend.connections': 1, breaker: { minimumCalls: 3 } });
      for (let round = 0; round < 3; round++) {
        const ids = Array.from({ length: 8 }, (_, i) => 1000 + round * 10 + i);
        for (const id of ids) c.query(id, { subtype: 's' });
        await c.until(() => (ids.every((id) => c.messages.some((m) => m.invokeId === id)) ? true : undefined), 3000, 'every reply');
        await wait(300);
      }
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.circuits[b.url].state, 'closed');
      assert.equal(health.backend.state, 'reachable');
      assert.equal((await outcomes(stack)).deadline > 0, true, 'queries did miss their deadline');
    });
  });

  describe('what the operator is told', () => {
    it('a refused connection and a name that does not resolve are told apart, in the log and on /health', async () => {
      const dead = await startTestBackend(() => {});
      const deadUrl = dead.url;
      await dead.close();
      for (const [url, cause] of [[deadUrl, /^unreachable: ECONNREFUSED 127\.0\.0\.1:\d+$/], ['http://no-such-host.invalid:8080', /^unreachable: (ENOTFOUND|EAI_AGAIN) no-such-host\.invalid$/]]) {
        const { stack, c } = await stackWith(url, { 'breaker.enabled': false });
        for (let i = 0; i < 5; i++) assert.equal((await c.ask({ subtype: 's' })).status, STATUS.E_AG_HOST_ERROR1);
        const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
        assert.match(health.backend.lastError, cause);
        const line = stack.log.lines.find((l) => /^backend failing/.test(l.message));
        assert.match(line.lastError, cause);
      }
    });
  });

  describe('several backends', () => {
    it('failover: a dead first origin costs no failed query while the second is healthy', async () => {
      const dead = await startTestBackend(() => {});
      const deadUrl = dead.url;
      await dead.close();
      const live = await switchable();
      cleanup.push(() => live.close());
      const { stack, c } = await stackWith([deadUrl, live.url], { 'backend.url': [deadUrl, live.url] });
      for (let i = 0; i < 25; i++) assert.equal((await c.ask({ subtype: 's' })).status, 0);
      assert.equal(live.requests.length, 25);
      const text = await stack.gw.metrics();
      assert.match(text, /^ged145_backend_retries_total [1-9]/m);
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.circuits[deadUrl].state, 'open', 'the dead origin is skipped from now on');
    });

    it('failover: a first origin that comes back gets the traffic back within 2 s of its return', async () => {
      const first = await switchable();
      const { port } = first;
      const live = await switchable();
      cleanup.push(() => first.close(), () => live.close());
      const { stack, c } = await stackWith(first.url, { 'backend.url': [first.url, live.url] });
      for (let i = 0; i < 5; i++) assert.equal((await c.ask({ subtype: 's' })).status, 0);
      assert.equal(first.requests.length, 5);
      first.server.closeAllConnections();
      await new Promise((r) => first.server.close(r)); // down: connections refused
      const downAt = Date.now();
      let backAt = 0;
      let failed = 0;
      while (Date.now() - downAt < 6000) {
        if (backAt === 0 && Date.now() - downAt >= 2500) {
          await new Promise((r) => first.server.listen(port, '127.0.0.1', r));
          backAt = Date.now();
        }
        if ((await c.ask({ subtype: 's' })).status !== 0) failed++;
        if (backAt > 0 && first.requests.length > 5) break;
        await wait(5);
      }
      assert.equal(failed, 0, 'the second origin answered every query while the first was down');
      assert.ok(first.requests.length > 5, 'the first origin got traffic again');
      const tookMs = Date.now() - backAt;
      assert.ok(tookMs <= 2000, `traffic back ${tookMs} ms after the origin returned`);
      const health = await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
      assert.equal(health.backend.circuits[first.url].state, 'closed');
    });

    it('balance: requests alternate between the origins', async () => {
      const one = await switchable();
      const two = await switchable();
      cleanup.push(() => one.close(), () => two.close());
      const { c } = await stackWith(one.url, { 'backend.url': [one.url, two.url], 'backend.strategy': 'balance' });
      for (let i = 0; i < 10; i++) assert.equal((await c.ask({ subtype: 's' })).status, 0);
      assert.deepEqual([one.requests.length, two.requests.length], [5, 5]);
    });

    it('never retries a request that may have been processed (a reset after the request was read)', async () => {
      const one = await switchable();
      const two = await switchable();
      cleanup.push(() => one.close(), () => two.close());
      one.mode = 'reset';
      const { c } = await stackWith(one.url, { 'backend.url': [one.url, two.url], 'breaker.enabled': false });
      const r = await c.ask({ subtype: 's' });
      assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR1]);
      assert.equal(two.requests.length, 0);
    });
  });
});
