'use strict';

// The router simulator obeys the router's rules, proved against scripted fake hosts, and
// drives the real gateway.

const assert = require('node:assert/strict');
const { serialize, STATUS } = require('../../lib/protocol');
const { Router } = require('../../simulator/router');
const { QueryMix } = require('../../simulator/workload');
const { startFakeHost } = require('../helpers/fake-host');
const { startStack } = require('../helpers/stack');
const { assertAnsweredOnce } = require('../helpers/answered');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(cond, ms = 3000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await wait(5);
  }
}

/** A well-behaved host, with hooks to misbehave per message type. */
function polite(overrides = {}) {
  return (m, conn) => {
    if (overrides[m.type]) {
      overrides[m.type](m, conn);
      return;
    }
    switch (m.type) {
      case 'OPEN_REQ': conn.send(serialize.openConf(m.invokeId)); break;
      case 'HEARTBEAT_REQ': conn.send(serialize.heartbeatConf(m.invokeId)); break;
      case 'CLOSE_REQ': conn.send(serialize.closeConf(m.invokeId)); break;
      case 'QUERY_REQ': conn.send(serialize.queryResp({ invokeId: m.invokeId, status: 0 })); break;
      default: break;
    }
  };
}

describe('router simulator against scripted hosts', () => {
  let host;
  afterEach(async () => {
    if (host) await host.close();
    host = null;
  });

  it('sends OPEN_REQ with IdleTimeout = 4 x HeartbeatInterval and ConnectInfo, and falls back to a lower version', async () => {
    host = await startFakeHost(polite({
      OPEN_REQ: (m, conn) => conn.send(m.version > 2 ? serialize.failureConf(m.invokeId, STATUS.E_AG_INVALID_VERSION) : serialize.openConf(m.invokeId)),
    }));
    const router = new Router({
      targets: [{ host: '127.0.0.1', port: host.port }], settings: { versions: [2, 4, 3], heartbeatIntervalMs: 2500, connectInfo: 'lab-A' },
    });
    await router.start();
    const opens = host.connections[0].received.filter((m) => m.type === 'OPEN_REQ');
    assert.deepEqual(opens.map((o) => o.version), [4, 3, 2]);
    assert.equal(opens[0].idleTimeoutMs, 10_000);
    assert.equal(opens[0].config, 'lab-A');
    assert.equal(host.connections.length, 1, 'the fallback happens on the same connection');
    await router.stop();
  });

  it('sends heartbeats only after HeartbeatInterval of idle link', async () => {
    host = await startFakeHost(polite());
    const router = new Router({ targets: [{ host: '127.0.0.1', port: host.port }], settings: { heartbeatIntervalMs: 150 } });
    await router.start();
    const hb = () => host.connections[0].received.filter((m) => m.type === 'HEARTBEAT_REQ').length;
    // Busy link: a query every 50 ms, no heartbeat.
    for (let i = 0; i < 8; i++) {
      router.query();
      await wait(50);
    }
    assert.equal(hb(), 0);
    await wait(400);
    assert.ok(hb() >= 2, `heartbeats on an idle link: ${hb()}`);
    assert.equal(router.stats.heartbeats.missed, 0);
    await router.stop();
  });

  it('counts a reply after RequestTimeout as late (still matched) and unknown or repeated InvokeIDs as violations', async () => {
    host = await startFakeHost(polite({
      QUERY_REQ: (m, conn) => {
        if (m.subtype === 'late') setTimeout(() => conn.send(serialize.queryResp({ invokeId: m.invokeId, status: 0 })), 120);
        else if (m.subtype === 'twice') {
          conn.send(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
          conn.send(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
        } else if (m.subtype === 'stranger') conn.send(serialize.queryResp({ invokeId: 999_999, status: 0 }));
      },
    }));
    const router = new Router({ targets: [{ host: '127.0.0.1', port: host.port }], settings: { requestTimeoutMs: 50 } });
    await router.start();
    router.query({ subtype: 'late', routerCallDay: 1, routerCallKey: 1 });
    router.query({ subtype: 'twice', routerCallDay: 1, routerCallKey: 2 });
    router.query({ subtype: 'stranger', routerCallDay: 1, routerCallKey: 3 });
    await until(() => router.stats.ok === 2 && router.stats.violationCount === 2);
    const s = await router.stop({ drainMs: 100 });
    assert.equal(s.late, 1);
    assert.deepEqual(s.violations, { 'second reply to one InvokeID': 1, 'reply to an unknown InvokeID': 1 });
    assert.equal(s.timeout, 1, 'the stranger query itself was never answered');
  });

  it('matches replies sent in any order', async () => {
    const held = [];
    host = await startFakeHost(polite({ QUERY_REQ: (m) => held.push(m) }));
    const router = new Router({ targets: [{ host: '127.0.0.1', port: host.port }] });
    await router.start();
    for (let i = 0; i < 10; i++) router.query();
    await until(() => held.length === 10);
    const conn = host.connections[0];
    for (const m of held.reverse()) conn.send(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
    await until(() => router.stats.ok === 10);
    assert.equal(router.stats.violationCount, 0);
    await router.stop();
  });

  it('drops the connection after HeartbeatLimit misses (late queries count) and reconnects after SessionRetry', async () => {
    host = await startFakeHost(polite({ QUERY_REQ: () => {} })); // never answers a query
    const router = new Router({
      targets: [{ host: '127.0.0.1', port: host.port }],
      settings: { requestTimeoutMs: 30, heartbeatLimit: 3, sessionRetryMs: 200, heartbeatIntervalMs: 60_000 },
    });
    await router.start();
    const downAt = [];
    router.on('down', () => downAt.push(Date.now()));
    const reopened = new Promise((r) => router.on('open', () => r(Date.now())));
    for (let i = 0; i < 3; i++) router.query();
    await until(() => downAt.length === 1);
    const at = await reopened;
    assert.ok(at - downAt[0] >= 190, `reconnected after ${at - downAt[0]} ms`);
    const s = await router.stop();
    assert.equal(s.closes['HeartbeatLimit (3) consecutive misses'], 1);
    assert.equal(s.lost, 3);
    assert.equal(s.reconnects, 1);
  });

  it('counts a missed heartbeat and retries after HeartbeatRetry', async () => {
    let answer = false;
    host = await startFakeHost(polite({
      HEARTBEAT_REQ: (m, conn) => { if (answer) conn.send(serialize.heartbeatConf(m.invokeId)); },
    }));
    const router = new Router({
      targets: [{ host: '127.0.0.1', port: host.port }], settings: { heartbeatIntervalMs: 50, heartbeatTimeoutMs: 40, heartbeatRetryMs: 100 },
    });
    await router.start();
    await until(() => router.stats.heartbeats.missed >= 1);
    answer = true;
    await until(() => router.stats.heartbeats.answered >= 1);
    const s = await router.stop();
    assert.ok(s.heartbeats.sent >= 2);
    assert.equal(s.violations['unexpected HEARTBEAT_CONF'], undefined);
  });

  it('ErrorThreshold consecutive FAILURE_CONFs force a reconnect', async () => {
    host = await startFakeHost(polite({ QUERY_REQ: (m, conn) => conn.send(serialize.failureConf(m.invokeId, STATUS.E_AG_HOST_ERROR1)) }));
    const router = new Router({ targets: [{ host: '127.0.0.1', port: host.port }], settings: { errorThreshold: 3, sessionRetryMs: 20 } });
    await router.start();
    for (let i = 0; i < 3; i++) router.query();
    await until(() => host.connections.length === 2);
    const s = await router.stop();
    assert.equal(s.closes['ErrorThreshold (3) consecutive errors'], 1);
    assert.equal(s.failures.E_AG_HOST_ERROR1, 3);
  });

  it('counts queries in flight when the host drops the connection as lost, and reconnects at once', async () => {
    host = await startFakeHost(polite({ QUERY_REQ: (m, conn) => { if (m.routerCallKey === 3) conn.socket.destroy(); } }));
    const router = new Router({ targets: [{ host: '127.0.0.1', port: host.port }], settings: { sessionRetryMs: 60_000 } });
    await router.start();
    router.query({ subtype: 'a', routerCallDay: 1, routerCallKey: 1 });
    router.query({ subtype: 'a', routerCallDay: 1, routerCallKey: 2 });
    router.query({ subtype: 'a', routerCallDay: 1, routerCallKey: 3 });
    await until(() => host.connections.length === 2 && router.connections[0].isOpen);
    const s = await router.stop();
    assert.equal(s.lost, 3);
    assert.equal(s.reconnects, 1);
  });

  it('duplicate mode sends every query to both sides and flags side B\'s copy Duplicate; hot standby fails over', async () => {
    const a = await startFakeHost(polite());
    const b = await startFakeHost(polite());
    try {
      const dup = new Router({ targets: [{ host: '127.0.0.1', port: a.port }, { host: '127.0.0.1', port: b.port }], sides: ['A', 'B'], mode: 'duplicate' });
      await dup.start();
      for (let i = 0; i < 5; i++) dup.query();
      await until(() => dup.stats.ok === 5);
      const qa = a.connections[0].received.filter((m) => m.type === 'QUERY_REQ');
      const qb = b.connections[0].received.filter((m) => m.type === 'QUERY_REQ');
      assert.deepEqual([qa.length, qb.length], [5, 5]);
      assert.ok(qa.every((m) => !m.duplicate) && qb.every((m) => m.duplicate));
      await dup.stop();

      const hot = new Router({
        targets: [{ host: '127.0.0.1', port: a.port }, { host: '127.0.0.1', port: b.port }], sides: ['A', 'B'], mode: 'hot-standby',
        settings: { sessionRetryMs: 60_000 },
      });
      await hot.start();
      hot.query();
      await until(() => hot.stats.ok === 1);
      await a.close(); // side A's host goes away for good
      await until(() => !hot.connections[0].isOpen);
      hot.query();
      await until(() => hot.stats.ok === 2);
      assert.equal(b.connections.at(-1).received.filter((m) => m.type === 'QUERY_REQ').length, 1);
      await hot.stop();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('sends CLOSE_REQ on shutdown and waits for CLOSE_CONF', async () => {
    host = await startFakeHost(polite());
    const router = new Router({ targets: [{ host: '127.0.0.1', port: host.port }] });
    await router.start();
    await router.stop();
    assert.equal(host.connections[0].received.at(-1).type, 'CLOSE_REQ');
  });

  it('open loop: latency counts from the scheduled time, so a stalled host shows up', async () => {
    let stalled = true;
    const held = [];
    host = await startFakeHost(polite({
      QUERY_REQ: (m, conn) => {
        if (stalled) held.push(m);
        else conn.send(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
      },
    }));
    const router = new Router({ targets: [{ host: '127.0.0.1', port: host.port }], settings: { requestTimeoutMs: 1000 } });
    await router.start();
    setTimeout(() => {
      stalled = false;
      for (const m of held) host.connections[0].send(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
    }, 200);
    const sent = await router.runOpenLoop({ rate: 200, durationMs: 500 });
    const s = await router.stop();
    assert.equal(sent, 100);
    assert.equal(s.ok, 100);
    assert.ok(s.latencyMs.max >= 150, `max ${s.latencyMs.max} ms reflects the 200 ms stall`);
    assert.ok(s.latencyMs.p50 < 50, `p50 ${s.latencyMs.p50}`);
  });
});

describe('query mix', () => {
  it('fills templates deterministically from a seed and respects weights', () => {
    const { prng } = require('../../lib/prng');
    const mix = new QueryMix(
      [{ weight: 3, subtype: 'a', clid: '555{rand:1000-1999}', vars: { 1: 'n{seq}' } }, { weight: 1, subtype: 'b', ecc: { 'x.y': '{pick:p|q}' } }], prng(1)
    );
    const qs = Array.from({ length: 4000 }, () => mix.next());
    const a = qs.filter((q) => q.subtype === 'a');
    assert.ok(a.length > 2800 && a.length < 3200, `${a.length}`);
    assert.ok(a.every((q) => /^5551\d{3}$/.test(q.clid)));
    assert.equal(qs[0].vars ? qs[0].vars[1] : qs[1].vars[1], qs[0].vars ? 'n1' : 'n2');
    assert.ok(qs.filter((q) => q.subtype === 'b').every((q) => ['p', 'q'].includes(q.ecc['x.y'])));
    const again = new QueryMix(
      [{ weight: 3, subtype: 'a', clid: '555{rand:1000-1999}', vars: { 1: 'n{seq}' } }, { weight: 1, subtype: 'b', ecc: { 'x.y': '{pick:p|q}' } }], prng(1)
    );
    assert.deepEqual(Array.from({ length: 50 }, () => again.next()), qs.slice(0, 50));
    assert.throws(() => new QueryMix([{ subtype: 'x', bogus: 1 }]), /bogus/);
  });
});

describe('router simulator against the gateway', () => {
  let stack;
  before(async () => {
    stack = await startStack({ gateway: { deadlineMs: 250 } });
  });
  after(() => stack.stop());

  it('pipelines a closed-loop window through sides A and B in duplicate mode with no violation', async () => {
    const router = new Router({ targets: [{ host: '127.0.0.1', port: stack.port }], sides: ['A', 'B'], mode: 'duplicate', seed: 3 });
    await router.start();
    await router.runClosedLoop({ window: 8, count: 400 });
    assertAnsweredOnce(await router.stop(), 400);
  });

  it('fragmented, coalesced and byte-by-byte writes all arrive intact', async () => {
    for (const injection of [{ frag: 4 }, { coalesce: true }, { byteByByte: true }, { frag: 3, coalesce: true, fragDelayMs: 1 }]) {
      const router = new Router({ targets: [{ host: '127.0.0.1', port: stack.port }], injection, seed: 5 });
      await router.start();
      await router.runClosedLoop({ window: 8, count: 150 });
      assertAnsweredOnce(await router.stop(), 150);
    }
  });

  it('every invalid frame it injects is caught: rejects answered E_AG_INVALID_MESSAGE, fatal ones close the connection', async () => {
    const router = new Router({
      targets: [{ host: '127.0.0.1', port: stack.port }], invalidRate: 0.2, seed: 11, settings: { sessionRetryMs: 10 }, injection: { frag: 2 },
    });
    await router.start();
    await router.runClosedLoop({ window: 4, count: 600 });
    const s = await router.stop();
    assert.ok(s.injected.reject > 50 && s.injected.fatal > 5, JSON.stringify(s.injected));
    assert.equal(s.caught.fatal + s.voided.fatal, s.injected.fatal);
    assert.equal(s.caught.reject + s.voided.reject, s.injected.reject, JSON.stringify(s));
    assert.deepEqual(s.violations, {});
    // Only queries sent behind a fatal frame go unanswered: the gateway answers all it read.
    assert.equal(s.lost, 0, JSON.stringify(s));
    assert.equal(s.sent, s.answered + s.voided.queries);
  });
});
