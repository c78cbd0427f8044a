'use strict';

// An answer cached under one meaning of a route never answers under another: a reload that
// changes the route's URL or mapping, and a second deployment on the same Redis, whose route of
// the same name asks something else. Real sockets, a real redis-server.

const assert = require('node:assert/strict');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { startRedis } = require('../../helpers/redis');
const { loadConfig } = require('../../../gateway/config');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** /v1/customers/CLID and /v2/customers/CLID, each saying which it is; every request 500 while `down`. */
async function customerApi() {
  const api = await startTestBackend((req, res) => {
    if (api.down) {
      res.statusCode = 500;
      res.end('down');
      return;
    }
    const m = /^\/(v\d)\/customers\/(\d+)$/.exec(req.url);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ tier: `${m[1]}-tier-${m[2]}`, segment: `${m[1]}-segment-${m[2]}` }));
  });
  api.down = false;
  return api;
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
    c.query(invokeId, fields);
    return c.waitFor((m) => m.invokeId === invokeId);
  };
  return c;
}

const CACHE = { ttlMs: 60_000, staleIfErrorMs: 3_600_000, key: ['clid'] };
const route = (version, field) => ({ url: `{api}/${version}/customers/{clid}`, response: { 'vars.1': field } });

/** The gateway settings with {api} in route URLs replaced by the API's URL. */
function settings(api, routes, extra = {}) {
  const named = Object.fromEntries(Object.entries(routes).map(([k, r]) => [k, { ...r, url: r.url.replace('{api}', api.url) }]));
  return {
    host: '127.0.0.1', port: 0, 'admin.port': 0, 'backend.url': api.url, warmup: false, routerRequestTimeoutMs: 600_000, 'breaker.enabled': false,
    cache: CACHE, routes: named, ...extra,
  };
}

describe('the answer cache keeps its meaning', function () {
  this.timeout(30_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });
  async function stackWith(gateway) {
    const stack = await startStack({ gateway });
    cleanup.push(() => stack.stop());
    const c = await session(stack);
    cleanup.push(() => c.close());
    return { stack, c };
  }

  it('a reload that changes a route\'s URL or mapping: no caller gets an answer cached before it, neither cached nor stale', async () => {
    const api = await customerApi();
    cleanup.push(() => api.close());
    const { stack, c } = await stackWith(settings(api, { cust: route('v1', 'tier') }));
    const callers = Array.from({ length: 10 }, (_, i) => `555100${i}`);
    for (const clid of callers) assert.equal((await c.ask({ subtype: 'cust', clid })).vars[1], `v1-tier-${clid}`);
    for (const clid of callers) assert.equal((await c.ask({ subtype: 'cust', clid })).vars[1], `v1-tier-${clid}`, 'cached');
    assert.equal(api.requests.length, 10);

    // The route now asks /v2: callers 0-4 while the API answers, 5-9 while it fails.
    stack.gateway.reload(loadConfig({ env: {}, overrides: settings(api, { cust: route('v2', 'tier') }) }));
    const before = await outcomes(stack);
    const afterUrl = [];
    for (const clid of callers.slice(0, 5)) afterUrl.push((await c.ask({ subtype: 'cust', clid })).vars[1]);
    assert.deepEqual(afterUrl, callers.slice(0, 5).map((clid) => `v2-tier-${clid}`), 'the new URL\'s answers');
    api.down = true;
    const whileDown = [];
    for (const clid of callers.slice(5)) whileDown.push(await c.ask({ subtype: 'cust', clid }));
    assert.deepEqual(whileDown.map((r) => [r.type, r.status]), Array(5).fill(['FAILURE_CONF', STATUS.E_AG_HOST_ERROR1]),
      'no stale answer of the old URL while the new one fails');

    // Same URL, another mapping: the v2 answers cached a moment ago are of the old mapping.
    api.down = false;
    stack.gateway.reload(loadConfig({ env: {}, overrides: settings(api, { cust: route('v2', 'segment') }) }));
    const afterMapping = [];
    for (const clid of callers.slice(0, 5)) afterMapping.push((await c.ask({ subtype: 'cust', clid })).vars[1]);
    assert.deepEqual(afterMapping, callers.slice(0, 5).map((clid) => `v2-segment-${clid}`), 'the new mapping\'s answers');
    // An unchanged route keeps its cache through a reload.
    stack.gateway.reload(loadConfig({ env: {}, overrides: settings(api, { cust: route('v2', 'segment') }) }));
    const requests = api.requests.length;
    for (const clid of callers.slice(0, 5)) assert.equal((await c.ask({ subtype: 'cust', clid })).vars[1], `v2-segment-${clid}`);
    assert.equal(api.requests.length, requests, 'the same meaning: answered from the cache');

    const after = await outcomes(stack);
    const delta = (k) => (after[k] || 0) - (before[k] || 0);
    assert.deepEqual([delta('cached'), delta('stale'), delta('ok')], [5, 0, 10], JSON.stringify({ before, after }));
  });

  /** Stacks on one Redis, each with its own routes and cache settings, once their stores are connected. */
  async function onOneRedis(api, redis, ...deployments) {
    const out = [];
    for (const [routes, cache] of deployments) out.push(await stackWith(settings(api, routes, { cache: { ...CACHE, store: redis.url, ...cache } })));
    const until = Date.now() + 5000;
    while (out.some((s) => s.stack.gateway.backend.toJSON().cache.store !== 'connected') && Date.now() < until) await wait(20);
    return out;
  }

  it('two deployments on one Redis: a route of the same name that maps another field asks its own API; side B with the same routes shares', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const api = await customerApi();
    cleanup.push(() => api.close());
    const [tiers, segments, sideB] = await onOneRedis(api, redis,
      [{ cust: route('v1', 'tier') }], [{ cust: route('v1', 'segment') }], [{ cust: route('v1', 'tier') }]);
    assert.equal((await tiers.c.ask({ subtype: 'cust', clid: '5551001' })).vars[1], 'v1-tier-5551001');
    await redis.waitForKeys(1); // written to Redis in the background
    assert.equal((await segments.c.ask({ subtype: 'cust', clid: '5551001' })).vars[1], 'v1-segment-5551001', 'another mapping: its own answer');
    assert.equal(api.requests.length, 2);
    assert.equal((await sideB.c.ask({ subtype: 'cust', clid: '5551001' })).vars[1], 'v1-tier-5551001');
    assert.equal(api.requests.length, 2, 'side B, the same routes: answered from what side A stored');
    assert.deepEqual([(await outcomes(sideB.stack)).cached, (await outcomes(segments.stack)).cached], [1, undefined]);
  });

  it('cache.namespace keeps apart even deployments whose routes are the same', async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const api = await customerApi();
    cleanup.push(() => api.close());
    const routes = { cust: route('v1', 'tier') };
    const [west, east] = await onOneRedis(api, redis, [routes, { namespace: 'west' }], [routes, { namespace: 'east' }]);
    assert.equal((await west.c.ask({ subtype: 'cust', clid: '5551001' })).vars[1], 'v1-tier-5551001');
    await redis.waitForKeys(1);
    assert.equal((await east.c.ask({ subtype: 'cust', clid: '5551001' })).vars[1], 'v1-tier-5551001');
    assert.equal(api.requests.length, 2, 'the same route in another namespace asks the API');
    const Redis = require('ioredis');
    const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    cleanup.push(() => r.disconnect());
    const keys = (await r.keys('ged145:answer:*')).sort();
    assert.equal(keys.length, 2, keys.join(' '));
    assert.match(keys[0], /^ged145:answer:east:[0-9a-f]{16}:\["cust","5551001"\]$/);
    assert.match(keys[1], /^ged145:answer:west:[0-9a-f]{16}:\["cust","5551001"\]$/);
  });
});
