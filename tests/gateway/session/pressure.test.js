'use strict';

// The promise under pressure: one reply per query, before the router's 300 ms, when traffic is
// hardest; and no protection that turns a short stall into seconds of failed calls. Each test runs
// the default configuration (what an operator who never reads the docs gets) over real loopback
// sockets, against a backend that is healthy except for the fault the test injects, and asserts
// the outcome counts the router sees.

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { serialize, STATUS } = require('../../../lib/protocol');
const { WireClient, exactlyOnce } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { spawnCli } = require('../../helpers/spawn');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const ROUTER_TIMEOUT_MS = 300;
const queryFrame = (invokeId) => serialize.queryReq({
  invokeId, routerCallDay: 1, routerCallKey: invokeId, subtype: 'balance', clid: `555${invokeId}`,
}, { nul: true });

/**
 * A backend that answers at once, or `delayMs` later for requests that arrive during a fault window
 * (fault = {from, until, delayMs} in performance.now() time, or null).
 */
async function healthyBackend() {
  const b = await startTestBackend((req, res) => {
    const answer = () => res.end('{"vars":{"1":"ok"}}');
    const now = performance.now();
    if (b.fault && now >= b.fault.from && now < b.fault.until) setTimeout(answer, b.fault.delayMs);
    else answer();
  });
  b.fault = null;
  return b;
}

/** What the router saw of the queries in `sent` (invokeId -> when it was written). */
function tally(c, sent, { excused = () => false } = {}) {
  const byId = new Map();
  for (const m of c.messages) if (sent.has(m.invokeId)) byId.set(m.invokeId, m);
  const out = {
    n: sent.size, ok: 0, failed: 0, lost: 0, late: 0, maxMs: 0, calm: 0, calmOk: 0,
  };
  for (const [id, at] of sent) {
    const m = byId.get(id);
    if (m === undefined) {
      out.lost++;
      continue;
    }
    const ms = m.receivedAt - at;
    out.maxMs = Math.max(out.maxMs, Math.round(ms));
    if (ms > ROUTER_TIMEOUT_MS) out.late++;
    const ok = m.type === 'QUERY_RESP' && m.status === 0;
    if (ok) out.ok++;
    else out.failed++;
    if (!excused(at)) {
      out.calm++;
      if (ok) out.calmOk++;
    }
  }
  const { duplicated } = exactlyOnce(c.messages, [...sent.keys()]);
  out.duplicated = duplicated.length;
  return out;
}

/**
 * Queries at `rate` per second for `ms`, written as a paced router would; at `fault.atMs` the
 * backend answers in fault.delayMs for fault.forMs. Resolves with their send times and when the
 * fault began (performance.now() time).
 */
async function paced(c, firstId, rate, ms, fault) {
  const sent = new Map();
  const t0 = performance.now();
  let faultAt = 0;
  let id = firstId;
  while (performance.now() - t0 < ms) {
    const due = Math.floor(((performance.now() - t0) * rate) / 1000);
    const frames = [];
    while (id - firstId < due) {
      sent.set(id, performance.now());
      frames.push(queryFrame(id++));
    }
    if (frames.length > 0) c.send(Buffer.concat(frames));
    if (faultAt === 0 && performance.now() - t0 >= fault.atMs) {
      faultAt = performance.now();
      fault.backend.fault = { from: faultAt, until: faultAt + fault.forMs, delayMs: fault.delayMs };
    }
    await wait(2);
  }
  return { sent, faultAt };
}

describe('under pressure (default configuration)', function () {
  this.timeout(60_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  /** A gateway of its own in this process, when the test reads its log lines. */
  async function setup(gateway = {}) {
    const b = await healthyBackend();
    cleanup.push(() => b.close());
    const stack = await startStack({ backendUrl: b.url, gateway: { routerRequestTimeoutMs: 300, ...gateway } });
    cleanup.push(() => stack.stop());
    const c = await WireClient.connect(stack.port);
    cleanup.push(() => c.close());
    await c.open();
    return { b, stack, c };
  }

  /**
   * The gateway as the product runs, through the CLI in a process of its own, so that the router
   * (this process) does not share its event loop: what the router measures is what a router would.
   */
  async function setupProcess() {
    const b = await healthyBackend();
    cleanup.push(() => b.close());
    const gw = spawnCli(['gateway', '--host', '127.0.0.1', '--port', '0', '--backend', b.url, '--admin-port', '0', '--log-level', 'info', '--ready-json'],
      { env: { GED145_WARMUP: '1' } }); // as the product starts: warmed up
    cleanup.push(async () => {
      gw.killGroup('SIGTERM');
      await gw.exited;
    });
    const { port, adminPort } = await gw.ready();
    const c = await WireClient.connect(Number(port));
    cleanup.push(() => c.close());
    await c.open();
    return { b, stack: { adminPort: Number(adminPort) }, c };
  }

  async function health(stack) {
    return (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json();
  }

  it('bursts of 500 queries in one write against a healthy backend: answered once, in time, the circuit stays closed', async () => {
    const { b, stack, c } = await setupProcess();
    for (let i = 0; i < 200; i++) { // a router's first minutes: sequential queries
      c.query(10_000 + i, { subtype: 'balance' });
      await c.waitFor((m) => m.invokeId === 10_000 + i);
    }
    let id = 1000;
    const results = [];
    for (let round = 0; round < 3; round++) {
      const sent = new Map();
      const frames = [];
      const at = performance.now();
      for (let i = 0; i < 500; i++) {
        sent.set(id, at);
        frames.push(queryFrame(id++));
      }
      const before = c.messages.length;
      c.send(Buffer.concat(frames));
      await c.waitForCount(before + 500, 5000);
      results.push(tally(c, sent));
      await wait(300);
    }
    // What holds on any machine: once each, none late, most answered, the circuit closed. How many
    // of a cold burst beat the deadline depends on the machine's speed (pressure-check.js and
    // docs/reliability.md give the figures: >= 95 % here).
    for (const r of results) {
      assert.deepEqual([r.lost, r.duplicated, r.late], [0, 0, 0], JSON.stringify(r));
      assert.ok(r.ok >= 0.5 * r.n, `most of the burst answered by the backend: ${JSON.stringify(r)}`);
    }
    assert.equal((await health(stack)).backend.circuits[b.url].state, 'closed');
    // Right after: sequential queries all answered from the backend.
    for (let i = 0; i < 200; i++) {
      c.query(id, { subtype: 'balance' });
      const r = await c.waitFor((m) => m.invokeId === id);
      assert.equal(r.status, 0);
      id++;
    }
  });

  it('a 0.4 s stall at 500 queries/s costs only the calls sent during it', async () => {
    const { b, stack, c } = await setupProcess();
    const { sent, faultAt: stallAt } = await paced(c, 1000, 500, 4000, {
      backend: b, atMs: 1500, forMs: 400, delayMs: 300,
    });
    await wait(600);
    // Excused: sent from 0.3 s before the stall to 1 s after it.
    const r = tally(c, sent, { excused: (at) => at >= stallAt - 300 && at < stallAt + 1400 });
    assert.deepEqual([r.lost, r.duplicated, r.late], [0, 0, 0], JSON.stringify(r));
    assert.ok(r.calmOk >= 0.999 * r.calm, `>= 99.9 % ok outside the stall: ${JSON.stringify(r)}`);
    assert.equal((await health(stack)).backend.circuits[b.url].state, 'closed');
  });

  it('a 3 s brownout (600 ms answers): failures during it, none late, all ok again within 1 s of its end', async () => {
    const { b, stack, c } = await setup();
    // 7.5 s: the one-origin circuit stays open breaker.minOpenMs (5 s) from its opening, about
    // 1.3 s in, its calls still sent and answered; the first answer after that closes it.
    const { sent, faultAt: from } = await paced(c, 1000, 300, 7500, {
      backend: b, atMs: 1000, forMs: 3000, delayMs: 600,
    });
    await wait(600);
    const r = tally(c, sent, { excused: (at) => at >= from - 300 && at < from + 4000 });
    assert.deepEqual([r.lost, r.duplicated, r.late], [0, 0, 0], JSON.stringify(r));
    assert.ok(r.calmOk >= 0.999 * r.calm, `>= 99.9 % ok outside the brownout and 1 s after: ${JSON.stringify(r)}`);
    const changes = stack.log.lines.filter((l) => /backend circuit (open|closed)/.test(l.message)).map((l) => l.message.split(' ')[2]);
    assert.equal(changes[0], 'open', 'the circuit opened during the brownout');
    assert.equal(changes.at(-1), 'closed', 'and closed after it');
  });

  it('a router that sends 1,100 queries and FIN gets 1,100 replies, then our FIN', async () => {
    const { c } = await setup();
    const ids = Array.from({ length: 1100 }, (_, i) => 10 + i);
    c.socket.end(Buffer.concat(ids.map(queryFrame)));
    await c.waitClosed(10_000);
    const { missing, duplicated } = exactlyOnce(c.messages, ids);
    assert.deepEqual([missing.length, duplicated.length], [0, 0]);
  });

  it('200 queries and FIN at limits.maxInFlight 5: 200 replies', async () => {
    const { stack, c } = await setup({ 'limits.maxInFlight': 5 });
    const ids = Array.from({ length: 200 }, (_, i) => 10 + i);
    c.socket.end(Buffer.concat(ids.map(queryFrame)));
    await c.waitClosed(10_000);
    const { missing, duplicated } = exactlyOnce(c.messages, ids);
    assert.deepEqual([missing.length, duplicated.length], [0, 0]);
    const line = stack.log.lines.find((l) => l.message === 'router disconnected');
    assert.equal(line.abandonedQueries, 0);
    assert.equal(line.queries, 200);
  });

  it('IdleTimeout 1 s, 20 slow queries behind maxInFlight 1: the session stays, every heartbeat is answered at once', async () => {
    const b = await startTestBackend(() => {}); // never answers: each query takes its whole deadline
    cleanup.push(() => b.close());
    // A 100 ms deadline: the 20 queries take 2 s one after the other, twice the IdleTimeout.
    const stack = await startStack({ backendUrl: b.url, gateway: { deadlineMs: 100, 'limits.maxInFlight': 1, 'breaker.enabled': false } });
    cleanup.push(() => stack.stop());
    const c = await WireClient.connect(stack.port);
    cleanup.push(() => c.close());
    await c.open({ idleTimeoutMs: 1000 });
    const ids = Array.from({ length: 20 }, (_, i) => 100 + i);
    c.send(Buffer.concat(ids.map(queryFrame)));
    const beats = [];
    for (let i = 0; i < 12; i++) {
      await wait(150);
      const at = performance.now();
      c.send(serialize.heartbeatReq(900 + i));
      const conf = await c.waitFor((m) => m.invokeId === 900 + i);
      beats.push(conf.receivedAt - at);
    }
    await c.waitForCount(1 + 12 + 20, 3000); // OPEN_CONF, the heartbeats, the queries
    assert.equal(c.closed, false, 'not closed for IdleTimeout');
    assert.ok(Math.max(...beats) < 50, `heartbeats answered at once, not behind the queries: ${beats.map(Math.round)}`);
    assert.ok(c.messages.filter((m) => ids.includes(m.invokeId)).every((m) => m.type === 'FAILURE_CONF' && m.status === STATUS.E_AG_HOST_ERROR1));
  });

  it('a router that goes away with queries waiting: every unanswered query is counted, in the metric and the close line', async () => {
    const b = await startTestBackend(() => {});
    cleanup.push(() => b.close());
    const stack = await startStack({ backendUrl: b.url, gateway: { 'limits.maxInFlight': 3 } });
    cleanup.push(() => stack.stop());
    const c = await WireClient.connect(stack.port);
    await c.open();
    c.send(Buffer.concat([1, 2, 3, 4, 5, 6, 7].map((i) => queryFrame(100 + i))));
    await wait(50);
    c.socket.resetAndDestroy();
    await wait(100);
    const line = stack.log.lines.find((l) => l.message === 'router disconnected');
    assert.equal(line.abandonedQueries, 7, '3 in flight and 4 waiting');
    assert.match(await stack.gw.metrics(), /^ged145_queries_total\{subtype="balance",outcome="lost_router_gone"\} 7$/m);
  });
});
