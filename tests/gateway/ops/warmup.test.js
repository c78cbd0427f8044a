'use strict';

const assert = require('node:assert/strict');
const sinon = require('sinon');
const warmup = require('../../../gateway/ops/warmup');
const Redis = require('ioredis');
const { Router } = require('../../../simulator/router');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { startRedis } = require('../../helpers/redis');

/** One query after the start is answered by the real backend (which answers {"vars":{"1":"real"}}). */
async function answersFromTheBackend(port, fields = {}) {
  const c = await WireClient.connect(port);
  await c.open();
  c.query(2, { subtype: 'x', ...fields });
  assert.deepEqual((await c.waitFor((m) => m.invokeId === 2)).vars, { 1: 'real' });
  c.close();
}

describe('gateway warm-up', () => {
  it('runs synthetic queries before listening, never against the real backend', async () => {
    const backend = await startTestBackend((req, res) => res.end('{"vars":{"1":"real"}}'));
    const stack = await startStack({ backendUrl: backend.url, gateway: { warmup: true } });
    try {
      const line = stack.log.lines.find((l) => /^warmed up in \d+ ms$/.test(l.message));
      assert.ok(line, JSON.stringify(stack.log.lines.map((l) => l.message)));
      assert.equal(backend.requests.length, 0, 'the real backend saw no warm-up request');
      assert.doesNotMatch(await stack.gw.metrics(), /subtype="warmup"/);
      // The warm-up's own sessions (a gateway of its own, on a throwaway port) log nowhere.
      assert.deepEqual(stack.log.lines.filter((l) => l.session !== undefined), []);
      assert.equal(stack.gateway.sessions.size, 0);
      await answersFromTheBackend(stack.port);
    } finally {
      await stack.stop();
      await backend.close();
    }
  });

  it('runs under des.require, and the encrypted sessions that follow work', async function () {
    this.timeout(30_000);
    // Its own session is plain: before, a gateway with des.require refused it, waited for replies
    // that never came, and never listened (nor stopped on SIGTERM).
    const KEY = 'k3y-8ch!';
    const backend = await startTestBackend((req, res) => res.end('{"vars":{"1":"real"}}'));
    const stack = await startStack({ backendUrl: backend.url, env: { GED145_DES_KEY: KEY }, gateway: { warmup: true, 'des.require': true } });
    try {
      assert.ok(stack.log.lines.find((l) => /^warmed up in \d+ ms$/.test(l.message)));
      const router = new Router({ targets: [{ host: '127.0.0.1', port: stack.port }], desKey: Buffer.from(KEY), seed: 3 });
      await router.start();
      await router.runClosedLoop({ window: 4, count: 20 });
      const s = await router.stop();
      assert.equal(s.ok, 20, JSON.stringify(s));
      assert.equal(backend.requests.length, 20, 'only the router\'s queries reached the real backend');
    } finally {
      await stack.stop();
      await backend.close();
    }
  });

  it('with a cache configured, warms a cache of its own: the gateway\'s starts empty, and its Redis holds no warm-up answer', async function () {
    this.timeout(30_000);
    const backend = await startTestBackend((req, res) => res.end('{"vars":{"1":"real"}}'));
    const redis = await startRedis();
    const r = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    const stack = await startStack({ backendUrl: backend.url, gateway: { warmup: true, cache: { ttlMs: 60_000, store: redis.url } } });
    try {
      assert.ok(stack.log.lines.find((l) => /^warmed up in \d+ ms$/.test(l.message)));
      assert.equal(stack.gateway.backend.toJSON().cache.entries, 0);
      assert.equal(await r.dbsize(), 0);
      await answersFromTheBackend(stack.port, { clid: '5551234' });
      // The router's answer is cached, where the configuration says.
      assert.equal(stack.gateway.backend.toJSON().cache.entries, 1);
      const until = Date.now() + 5000;
      while (await r.dbsize() === 0 && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
      assert.equal(await r.dbsize(), 1);
      assert.equal(backend.requests.length, 1);
    } finally {
      await stack.stop();
      await backend.close();
      r.disconnect();
      await redis.stop();
    }
  });

  it('a warm-up that fails is a warning, and the gateway listens without it', async () => {
    const backend = await startTestBackend((req, res) => res.end('{"vars":{"1":"real"}}'));
    const stub = sinon.stub(warmup, 'warmUp').rejects(new Error('no reply for 10000 ms'));
    let stack;
    try {
      stack = await startStack({ backendUrl: backend.url, gateway: { warmup: true } });
      assert.equal(stub.callCount, 1);
      const line = stack.log.lines.find((l) => l.level === 'warn' && /^warm-up stopped/.test(l.message));
      assert.equal(line && line.message, 'warm-up stopped: no reply for 10000 ms; listening without it (the first queries may be slower)');
      await answersFromTheBackend(stack.port);
    } finally {
      stub.restore();
      if (stack) await stack.stop();
      await backend.close();
    }
  });
});
