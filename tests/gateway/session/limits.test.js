'use strict';

// Process-wide limits over real sockets: session limit, allowlist, slow readers, and the admin port.

const assert = require('node:assert/strict');
const net = require('node:net');
const { performance } = require('node:perf_hooks');
const { serialize, STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack } = require('../../helpers/stack');

describe('gateway limits and admin port', () => {
  it('answers OPEN_REQs past limits.maxSessions with E_AG_HOST_OFFLINE; the open sessions stay fast', async () => {
    const stack = await startStack({ gateway: { 'limits.maxSessions': 2 } });
    const clients = [];
    try {
      for (let i = 0; i < 5; i++) clients.push(await WireClient.connect(stack.port));
      const replies = await Promise.all(clients.map((c, i) => c.open({ invokeId: 1, config: `c${i}` })));
      const offline = replies.filter((r) => r.type === 'FAILURE_CONF' && r.status === STATUS.E_AG_HOST_OFFLINE);
      assert.equal(replies.filter((r) => r.type === 'OPEN_CONF').length, 2);
      assert.equal(offline.length, 3);
      const opened = clients.filter((c, i) => replies[i].type === 'OPEN_CONF');
      opened[0].query(2, { subtype: 'echo', vars: { 1: 'ok' } });
      assert.deepEqual((await opened[0].waitFor((m) => m.invokeId === 2)).vars, { 1: 'ok' });
      // A refused connection is closed, and its slot is not counted.
      await Promise.all(clients.filter((c, i) => replies[i].type !== 'OPEN_CONF').map((c) => c.waitClosed()));
      opened[1].close();
      await new Promise((r) => setTimeout(r, 50));
      const late = await WireClient.connect(stack.port);
      clients.push(late);
      assert.equal((await late.open()).type, 'OPEN_CONF');
    } finally {
      for (const c of clients) c.close();
      await stack.stop();
    }
  });

  it('closes a connection from an address not on the allowlist before reading a byte', async () => {
    const stack = await startStack({ gateway: { allowlist: ['10.9.9.9'] } });
    try {
      const c = await WireClient.connect(stack.port);
      c.send(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 1000 }));
      await c.waitClosed();
      assert.equal(c.messages.length, 0);
      assert.equal(stack.gateway.sessions.size, 0);
      assert.match(await stack.gw.metrics(), /ged145_connections_refused_total\{reason="allowlist"\} 1/);
    } finally {
      await stack.stop();
    }
  });

  it('lets an allowlisted address in', async () => {
    const stack = await startStack({ gateway: { allowlist: ['127.0.0.1'] } });
    try {
      const c = await WireClient.connect(stack.port);
      assert.equal((await c.open()).type, 'OPEN_CONF');
      c.close();
    } finally {
      await stack.stop();
    }
  });

  it('a router that stops reading: the gateway stops reading it, stays under the outbound limit, then disconnects only it', async () => {
    // No breaker and a long deadline: under these bursts the in-process REST simulator misses
    // 250 ms deadlines, and an open circuit, or queries that waited past their deadline, are
    // answered with short FAILURE_CONFs that take long to fill the outbound buffer. This test is
    // about the buffer: the replies must be the big echoes.
    const stack = await startStack({
      gateway: {
        deadlineMs: 10_000, 'limits.maxOutboundBytes': 64 * 1024, 'limits.maxInFlight': 200, 'breaker.enabled': false,
      },
    });
    const healthy = await WireClient.connect(stack.port);
    const slow = net.connect(stack.port, '127.0.0.1');
    slow.on('error', () => {});
    try {
      await new Promise((r) => slow.once('connect', r));
      slow.write(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60000 }));
      await healthy.open();
      slow.pause(); // never read a reply
      const big = { subtype: 'echo', vars: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i + 1, 'v'.repeat(200)])) };
      const burst = Buffer.concat(Array.from({ length: 500 }, (_, i) => serialize.queryReq({ invokeId: 10 + i, routerCallDay: 1, routerCallKey: i, ...big })));
      let closed = false;
      slow.on('close', () => { closed = true; });
      for (let k = 0; k < 40 && !closed; k++) {
        slow.write(burst);
        await new Promise((r) => setTimeout(r, 50));
        const session = [...stack.gateway.sessions].find((s) => s.connectInfo === undefined && s.state === 'open' && s.socket.remotePort === slow.localPort);
        if (session) assert.ok(session.socket.writableLength <= 64 * 1024 + 4096, `buffered ${session.socket.writableLength}`);
      }
      const until = Date.now() + 5000;
      while (!closed && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.ok(closed, 'the slow reader was disconnected');
      healthy.query(2, { subtype: 'echo', vars: { 1: 'fine' } });
      assert.deepEqual((await healthy.waitFor((m) => m.invokeId === 2)).vars, { 1: 'fine' });
    } finally {
      slow.destroy();
      healthy.close();
      await stack.stop();
    }
  });

  it('admin: /health, /ready, /sessions and Prometheus /metrics', async () => {
    const stack = await startStack();
    const admin = `http://127.0.0.1:${stack.adminPort}`;
    const c = await WireClient.connect(stack.port);
    try {
      await c.open({ config: 'metrics-test' });
      c.query(2, { subtype: 'echo' });
      c.query(3, { subtype: 'fail' });
      c.send(serialize.heartbeatReq(4));
      c.send(Buffer.from('00000004000000630000000d', 'hex'));
      await c.waitForCount(5);
      const health = await (await fetch(`${admin}/health`)).json();
      assert.equal(health.status, 'ok');
      assert.ok(['reachable', 'failing'].includes(health.backend.state), JSON.stringify(health));
      assert.equal((await fetch(`${admin}/ready`)).status, 200);
      const sessions = await (await fetch(`${admin}/sessions`)).json();
      assert.equal(sessions[0].connectInfo, 'metrics-test');
      assert.equal(sessions[0].counters.queries, 2);
      const res = await fetch(`${admin}/metrics`);
      assert.match(res.headers.get('content-type'), /text\/plain/);
      const text = await res.text();
      assert.match(text, /ged145_queries_total\{subtype="echo",outcome="ok"\} 1/);
      assert.match(text, /ged145_queries_total\{subtype="fail",outcome="host_error"\} 1/);
      assert.match(text, /ged145_heartbeats_total 1/);
      assert.match(text, /ged145_protocol_errors_total\{code="unknown_type"\} 1/);
      assert.match(text, /ged145_sessions\{state="open"\} 1/);
      assert.match(text, /ged145_query_duration_seconds_bucket\{le="0.25",outcome="ok"\} 1/);
      assert.match(text, /ged145_queries_in_flight 0/);
      // Node's own metrics under their standard names, as stock dashboards expect them.
      assert.match(text, /^process_cpu_user_seconds_total /m);
      assert.match(text, /^nodejs_eventloop_lag_seconds /m);
      assert.ok(!/^ged145_process_|^ged145_nodejs_/m.test(text));
      // Each connection is counted once, in the state it is in.
      const idle = await WireClient.connect(stack.port); // connected, no session yet
      c.send(serialize.closeReq(9));
      await c.waitFor((m) => m.invokeId === 9);
      const states = await stack.gw.metrics();
      assert.match(states, /ged145_sessions\{state="connected"\} 1/);
      assert.match(states, /ged145_sessions\{state="open"\} 0/);
      assert.match(states, /ged145_sessions\{state="closing"\} 1/);
      idle.close();
    } finally {
      c.close();
      await stack.stop();
    }
  });

  it('/ready is 503 while draining; a drain answers what is in flight and what arrives meanwhile, then closes', async () => {
    const stack = await startStack({ gateway: { deadlineMs: 2000 } });
    const admin = `http://127.0.0.1:${stack.adminPort}`;
    const c = await WireClient.connect(stack.port);
    await c.open();
    for (let i = 0; i < 20; i++) c.query(10 + i, { subtype: 'slow', vars: { 1: '200' } });
    await new Promise((r) => setTimeout(r, 50));
    const stopping = stack.gateway.shutdown('test drain');
    assert.equal((await fetch(`${admin}/ready`)).status, 503);
    c.query(99, { subtype: 'echo' });
    await stopping;
    await c.waitClosed();
    const byId = new Map(c.messages.map((m) => [m.invokeId, m]));
    for (let i = 0; i < 20; i++) assert.equal(byId.get(10 + i).status, 0, `query ${10 + i}`);
    assert.equal(byId.get(99).status, 0, 'a query that arrives while the session drains is answered, not refused');
    assert.ok(c.messages.some((m) => m.type === 'FAILURE_EVENT' && m.status === STATUS.E_AG_HOST_OFFLINE));
    await stack.stop();
  });

  it('a drain answers a query already in its socket when the drain starts; one sent after our FIN is counted on the close line', async () => {
    const stack = await startStack();
    const c = await WireClient.connect(stack.port);
    await c.open();
    // Query 5 reaches the gateway's socket while its event loop (this process's) is busy: the
    // drain starts with nothing in flight, before the gateway has read it.
    c.query(5, { subtype: 'echo', vars: { 1: 'read' } });
    const busyUntil = performance.now() + 30;
    while (performance.now() < busyUntil) { /* the bytes arrive meanwhile */ }
    // Query 6 leaves once the FAILURE_EVENT (written with our FIN) is read: no answer is possible.
    let sentAfterFin = false;
    c.socket.on('data', () => {
      if (sentAfterFin || !c.messages.some((m) => m.type === 'FAILURE_EVENT')) return;
      sentAfterFin = true;
      c.query(6, { subtype: 'echo' });
    });
    await stack.gateway.shutdown('test drain');
    await c.waitClosed();
    assert.deepEqual(c.messages.filter((m) => m.type === 'QUERY_RESP').map((m) => [m.invokeId, m.vars]), [[5, { 1: 'read' }]]);
    assert.ok(sentAfterFin);
    const line = stack.log.lines.find((l) => l.message === 'router disconnected');
    assert.equal(line.abandonedQueries, 0);
    assert.equal(line.queriesAfterClose, 1, 'the query that came after our FIN');
    await stack.stop();
  });

  it('a drain that starts inside a long chunk (read in slices) answers every frame of it first', async () => {
    const stack = await startStack();
    const c = await WireClient.connect(stack.port);
    await c.open();
    // 200 heartbeats are answered as they are read, so nothing is in flight while the rest of
    // the chunk waits for the next slices; the drain starts at the tenth.
    const { heartbeats } = stack.gw.opened.metrics;
    const inc = heartbeats.inc.bind(heartbeats);
    let seen = 0;
    let stopping = null;
    heartbeats.inc = (...args) => {
      if (++seen === 10) stopping = stack.gateway.shutdown('test drain');
      return inc(...args);
    };
    const chunk = [];
    for (let i = 0; i < 200; i++) chunk.push(serialize.heartbeatReq(100 + i));
    chunk.push(serialize.queryReq({ invokeId: 7, routerCallDay: 1, routerCallKey: 7, subtype: 'echo', vars: { 1: 'last' } }, { nul: true }));
    c.send(Buffer.concat(chunk));
    await c.waitClosed();
    await stopping;
    assert.equal(c.messages.filter((m) => m.type === 'HEARTBEAT_CONF').length, 200);
    assert.deepEqual(c.messages.find((m) => m.invokeId === 7).vars, { 1: 'last' });
    const line = stack.log.lines.find((l) => l.message === 'router disconnected');
    assert.equal(line.queriesAfterClose, 0);
    await stack.stop();
  });
});
