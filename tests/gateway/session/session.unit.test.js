'use strict';

// The Session alone: a fake socket, a fake backend and sinon's fake clock, so the timing rules
// (idle timeout, per-query deadline, CLOSE drain, open and partial-frame timeouts) are checked
// exactly, without waiting.

const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const sinon = require('sinon');
const {
  serialize, MessageReader, STATUS, DIRECTION, DEFAULT_PROFILE,
} = require('../../../lib/protocol');
const { Session } = require('../../../gateway/session/session');
const { QueryHandle } = require('../../../gateway/backend');
const { SessionHost } = require('../../../gateway/session/host');
const { Metrics } = require('../../../gateway/ops/metrics');
const { loadConfig } = require('../../../gateway/config');
const { captureLogger } = require('../../helpers/stack');

class FakeSocket extends EventEmitter {
  constructor() {
    super();
    this.remoteAddress = '10.0.0.1';
    this.remotePort = 4000;
    this.written = [];
    this.destroyed = false;
    this.paused = false;
    this.writableLength = 0;
    this.replies = [];
    this.reader = new MessageReader({ direction: DIRECTION.HOST_TO_ROUTER, onMessage: (m) => this.replies.push(m), onError: (e) => { throw e; } });
  }

  setNoDelay() {}

  setKeepAlive() {}

  /** What went out between a cork and its uncork: one entry of `bursts`, the invokeIds written. */
  cork() {
    this.burst = [];
  }

  uncork() {
    (this.bursts ||= []).push(this.burst);
    this.burst = null;
  }

  pause() { this.paused = true; }

  resume() { this.paused = false; }

  /** A write outside a cork is a burst of its own. */
  write(buf) {
    const before = this.replies.length;
    this.reader.push(buf);
    const ids = this.replies.slice(before).map((m) => m.invokeId);
    if (this.burst) this.burst.push(...ids);
    else if (this.bursts) this.bursts.push(ids);
    return true;
  }

  end(buf) {
    if (buf) this.write(buf);
    this.emit('finish');
  }

  destroy() {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }

  /** The router sends. */
  feed(buf) {
    this.emit('data', buf);
  }
}

/** The gateway a session sees: SessionHost with a FakeBackend behind it, counting what it admits. */
class TestHost extends SessionHost {
  constructor(config, backend, level = 'debug') {
    super({
      config,
      profile: DEFAULT_PROFILE,
      serialize,
      log: captureLogger(level),
      metrics: new Metrics({ collectDefault: false }),
      backend: new FakeDispatch(backend),
    });
    this.opened = 0;
    this.closedSession = false;
  }

  admitSession() {
    this.opened++;
    return null;
  }

  releaseSession() {
    this.opened--;
  }

  onSessionClosed() {
    this.closedSession = true;
  }
}

/** The session's backend side over a FakeBackend, as Backend.dispatch makes it: a real handle, no cache, no fallback. */
class FakeDispatch {
  constructor(backend) {
    this.chain = { dispatch: (ctx) => backend.call(ctx.query, ctx.signal) };
  }

  dispatch(query, deadlineAt, group, handler, send = true) {
    const handle = new QueryHandle(this.chain, query, deadlineAt, group, handler, null);
    if (send) handle.start();
    return handle;
  }
}

/** A backend whose answers the test releases by hand. */
class FakeBackend {
  constructor() {
    this.calls = [];
  }

  call(q, signal) {
    return new Promise((resolve) => {
      const call = { q, signal, resolve, aborted: false };
      signal.addEventListener('abort', () => { call.aborted = true; });
      this.calls.push(call);
    });
  }
}

describe('Session (unit, fake clock)', () => {
  let clock;
  let socket;
  let backend;
  let session;
  let gateway;

  function make(overrides = {}) {
    const config = loadConfig({ env: {}, overrides: { 'backend.url': 'http://127.0.0.1:1', ...overrides } });
    backend = new FakeBackend();
    gateway = new TestHost(config, backend);
    socket = new FakeSocket();
    session = new Session(socket, gateway);
  }

  const flush = () => clock.tickAsync(0);

  beforeEach(() => {
    clock = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
  });
  afterEach(() => clock.restore());

  function open(idleTimeoutMs = 60_000) {
    socket.feed(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs }));
    assert.equal(socket.replies.at(-1).type, 'OPEN_CONF');
  }

  it('closes the connection when nothing arrives for OPEN_REQ.IdleTimeout', async () => {
    make();
    open(4000);
    await clock.tickAsync(3000);
    socket.feed(serialize.heartbeatReq(2)); // activity restarts the count
    await clock.tickAsync(3999);
    assert.equal(socket.destroyed, false);
    await clock.tickAsync(2);
    assert.equal(socket.destroyed, true);
    assert.equal(session.closeReason, 'idle timeout');
  });

  it('closes a connection that never sends OPEN_REQ after limits.openTimeoutMs', async () => {
    make({ 'limits.openTimeoutMs': 2000 });
    await clock.tickAsync(1999);
    assert.equal(socket.destroyed, false);
    await clock.tickAsync(1);
    assert.equal(session.closeReason, 'open timeout');
  });

  it('closes a connection whose frame stays incomplete past limits.partialFrameTimeoutMs, even if bytes trickle', async () => {
    make({ 'limits.partialFrameTimeoutMs': 5000 });
    open();
    const frame = serialize.queryReq({ invokeId: 3, routerCallDay: 1, routerCallKey: 1, subtype: 'echo' });
    for (let i = 0; i < 4; i++) {
      socket.feed(frame.subarray(i, i + 1)); // one byte a second
      await clock.tickAsync(1000);
    }
    assert.equal(socket.destroyed, false);
    await clock.tickAsync(1100);
    assert.equal(session.closeReason, 'partial frame timeout');
  });

  it('answers E_AG_HOST_ERROR1 at the deadline, aborts the request, and drops the late answer', async () => {
    make({ deadlineMs: 250 });
    open();
    socket.feed(serialize.queryReq({ invokeId: 5, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    await clock.tickAsync(249);
    assert.equal(socket.replies.length, 1);
    await clock.tickAsync(1);
    assert.equal(socket.replies.length, 2);
    assert.deepEqual([socket.replies[1].invokeId, socket.replies[1].status], [5, STATUS.E_AG_HOST_ERROR1]);
    assert.equal(backend.calls[0].aborted, true);
    backend.calls[0].resolve({ kind: 'ok', answer: { vars: { 1: 'late' } } });
    await flush();
    assert.equal(socket.replies.length, 2, 'the late answer wrote nothing');
  });

  it('one deadline timer per session: each query still expires at its own deadline, to the millisecond', async () => {
    make({ deadlineMs: 250 });
    open();
    const expiredAt = {};
    const query = (invokeId) => socket.feed(serialize.queryReq({ invokeId, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    const watch = async (ms) => {
      for (let t = 0; t < ms; t++) {
        await clock.tickAsync(1);
        for (const m of socket.replies) if (m.type === 'FAILURE_CONF' && !(m.invokeId in expiredAt)) expiredAt[m.invokeId] = Date.now();
      }
    };
    const t0 = Date.now();
    query(10);
    await watch(100);
    query(11);
    query(12);
    await watch(30);
    backend.calls[1].resolve({ kind: 'ok', answer: {} }); // 11 answered in time: no reply at its deadline
    await watch(20);
    query(13);
    await watch(400);
    assert.deepEqual(Object.fromEntries(Object.entries(expiredAt).map(([id, at]) => [id, at - t0])), { 10: 250, 12: 350, 13: 400 });
    assert.equal(socket.replies.filter((m) => m.invokeId === 11).length, 1);
    const window = gateway.connectionLog.timer === null ? 0 : 1; // the connection log's summary, due at its window's end
    assert.equal(clock.countTimers(), 1 + window, 'only the idle timer is left once nothing is in flight');
  });

  it('after a reload shortens deadlineMs, a newer query expires before an older one', async () => {
    make({ deadlineMs: 1000, routerRequestTimeoutMs: 2000 });
    open();
    socket.feed(serialize.queryReq({ invokeId: 20, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    await clock.tickAsync(10);
    gateway.config = loadConfig({ env: {}, overrides: { 'backend.url': 'http://127.0.0.1:1', deadlineMs: 100, routerRequestTimeoutMs: 2000 } });
    socket.feed(serialize.queryReq({ invokeId: 21, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    await clock.tickAsync(100);
    assert.deepEqual(socket.replies.filter((m) => m.type === 'FAILURE_CONF').map((m) => m.invokeId), [21]);
    await clock.tickAsync(889);
    assert.equal(socket.replies.filter((m) => m.type === 'FAILURE_CONF').length, 1);
    await clock.tickAsync(1);
    assert.deepEqual(socket.replies.filter((m) => m.type === 'FAILURE_CONF').map((m) => m.invokeId), [21, 20]);
  });

  it('answers CLOSE_REQ only once every query in flight is answered', async () => {
    make();
    open();
    socket.feed(serialize.queryReq({ invokeId: 5, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    socket.feed(serialize.queryReq({ invokeId: 6, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    socket.feed(serialize.closeReq(7));
    await flush();
    assert.deepEqual(socket.replies.map((m) => m.type), ['OPEN_CONF']);
    backend.calls[1].resolve({ kind: 'ok', answer: {} });
    await flush();
    assert.deepEqual(socket.replies.map((m) => m.invokeId), [1, 6]);
    backend.calls[0].resolve({ kind: 'app_error', text: 'nope' });
    await flush();
    assert.deepEqual(socket.replies.map((m) => [m.type, m.invokeId]), [['OPEN_CONF', 1], ['QUERY_RESP', 6], ['FAILURE_CONF', 5], ['CLOSE_CONF', 7]]);
    assert.equal(socket.destroyed, false);
  });

  it('holds replies for one round of I/O while other queries are in flight; the last one leaves at once', async () => {
    make();
    open();
    for (let i = 0; i < 3; i++) socket.feed(serialize.queryReq({ invokeId: 10 + i, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    const ticks = async () => { for (let i = 0; i < 10; i++) await new Promise((r) => process.nextTick(r)); };
    await new Promise((r) => setImmediate(r));
    socket.bursts = [];
    backend.calls[0].resolve({ kind: 'ok', answer: {} }); // two answers from two backend sockets in one round
    await ticks();
    backend.calls[1].resolve({ kind: 'ok', answer: {} });
    await ticks();
    assert.deepEqual(socket.bursts, [], 'held while query 12 is in flight');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(socket.bursts, [[10, 11]]);
    backend.calls[2].resolve({ kind: 'ok', answer: {} });
    for (let i = 0; i < 20; i++) await null; // promise continuations only: no tick, no round of I/O
    assert.deepEqual(socket.bursts, [[10, 11], [12]], 'nothing else in flight: written at once, not corked until the next tick');
  });

  it('answers what one chunk of router input asks in one burst', async () => {
    const tick = () => new Promise((r) => process.nextTick(r));
    make();
    open();
    await tick();
    socket.bursts = [];
    socket.feed(Buffer.concat([21, 22, 23].map((id) => serialize.heartbeatReq(id))));
    assert.deepEqual(socket.bursts, [], 'corked until the end of the tick');
    await tick();
    assert.deepEqual(socket.bursts, [[21, 22, 23]]);
  });

  const query = (invokeId) => serialize.queryReq({ invokeId, routerCallDay: 1, routerCallKey: 1, subtype: 'x' });

  it('past limits.maxInFlight, keeps reading: queries wait in order, heartbeats are answered at once', async () => {
    make({ 'limits.maxInFlight': 4 });
    open();
    socket.feed(Buffer.concat([10, 11, 12, 13, 14, 15].map(query).concat(serialize.heartbeatReq(50))));
    await flush();
    assert.deepEqual(backend.calls.map((c) => c.q.invokeId), [10, 11, 12, 13]);
    assert.equal(socket.paused, false, 'still reading');
    assert.deepEqual(socket.replies.slice(1).map((m) => [m.type, m.invokeId]), [['HEARTBEAT_CONF', 50]]);
    assert.equal(session.toJSON().waiting, 2);
    backend.calls[0].resolve({ kind: 'ok', answer: {} });
    await flush();
    assert.deepEqual(backend.calls.map((c) => c.q.invokeId), [10, 11, 12, 13, 14], 'a slot freed: the oldest waiting query goes');
    for (const c of backend.calls.slice(1)) c.resolve({ kind: 'ok', answer: {} });
    await flush();
    backend.calls[5].resolve({ kind: 'ok', answer: {} });
    await flush();
    assert.deepEqual(socket.replies.filter((m) => m.type === 'QUERY_RESP').map((m) => m.invokeId), [10, 11, 12, 13, 14, 15]);
  });

  it('stops reading once the waiting requests pass limits.maxQueuedBytes, reads again at half', async () => {
    const size = query(10).length;
    make({ 'limits.maxInFlight': 1, 'limits.maxQueuedBytes': 4 * size });
    open();
    for (let i = 0; i < 6; i++) socket.feed(query(10 + i));
    assert.equal(socket.paused, true, '5 waiting are past 4 frames');
    for (let i = 0; i < 3; i++) {
      backend.calls[i].resolve({ kind: 'ok', answer: {} });
      await flush();
    }
    assert.equal(socket.paused, false, '2 waiting: read again');
  });

  it('a query that waited past its deadline is answered at once, without asking the backend', async () => {
    make({ 'limits.maxInFlight': 1, deadlineMs: 250 });
    open();
    socket.feed(Buffer.concat([query(10), query(11)]));
    await clock.tickAsync(250); // 10 expires; 11, which arrived with it, gets its slot at its own deadline
    assert.equal(backend.calls.length, 1);
    assert.deepEqual(socket.replies.slice(1).map((m) => [m.type, m.invokeId, m.status]), [
      ['FAILURE_CONF', 10, STATUS.E_AG_HOST_ERROR1], ['FAILURE_CONF', 11, STATUS.E_AG_HOST_ERROR1],
    ]);
  });

  it('a router that is waiting for its queued queries is not idle; heartbeats behind them are answered', async () => {
    make({ 'limits.maxInFlight': 1, deadlineMs: 250 });
    open(1000);
    socket.feed(Buffer.concat(Array.from({ length: 20 }, (_, i) => query(10 + i))));
    for (let t = 0; t < 20; t++) {
      await clock.tickAsync(250); // each query waits its whole deadline
      if (t % 3 === 0) socket.feed(serialize.heartbeatReq(100 + t));
    }
    await clock.tickAsync(10);
    assert.equal(socket.destroyed, false, 'not closed for IdleTimeout');
    const beats = socket.replies.filter((m) => m.type === 'HEARTBEAT_CONF').length;
    assert.equal(beats, 7);
    assert.equal(socket.replies.filter((m) => m.type === 'FAILURE_CONF').length, 20, 'every query answered');
  });

  it('a half-close answers every query the router sent, those waiting included, then closes', async () => {
    make({ 'limits.maxInFlight': 2 });
    open();
    socket.feed(Buffer.concat([10, 11, 12, 13, 14].map(query)));
    socket.emit('end');
    for (let i = 0; i < 5; i++) {
      await flush();
      backend.calls[i].resolve({ kind: 'ok', answer: {} });
    }
    await flush();
    assert.deepEqual(socket.replies.filter((m) => m.type === 'QUERY_RESP').map((m) => m.invokeId), [10, 11, 12, 13, 14]);
  });

  it('disconnects a router that stops reading once its unread replies pass limits.maxOutboundBytes', async () => {
    make({ 'limits.maxOutboundBytes': 4096 });
    open();
    socket.writableLength = 4097;
    socket.feed(serialize.heartbeatReq(3));
    assert.equal(socket.destroyed, true);
    assert.equal(session.closeReason, 'outbound buffer limit');
  });

  it('writes nothing and aborts every request when the socket dies mid-query', async () => {
    make();
    open();
    for (let i = 0; i < 3; i++) socket.feed(serialize.queryReq({ invokeId: 10 + i, routerCallDay: 1, routerCallKey: 1, subtype: 'x' }));
    socket.destroy();
    assert.ok(backend.calls.every((c) => c.aborted));
    for (const c of backend.calls) c.resolve({ kind: 'ok', answer: {} });
    await clock.tickAsync(1000);
    assert.equal(socket.replies.length, 1);
    assert.equal(gateway.opened, 0, 'the open session was released');
  });

  it('with log.redact, a debug query line carries no CLID, CED or variable value', async () => {
    make({ 'log.redact': true, 'log.level': 'debug' });
    open();
    socket.feed(serialize.queryReq({
      invokeId: 9, routerCallDay: 1, routerCallKey: 1, subtype: 'x', clid: '5559876543', ced: '4444', cdpd: '77', vars: { 1: 'secret-var' },
      ecc: { 'user.pin': '9999' }, eccArrays: [{ name: 'user.a', index: 0, value: 'hidden' }],
    }));
    const text = JSON.stringify(gateway.log.lines);
    assert.match(text, /"invokeId":9/);
    for (const secret of ['5559876543', '4444', '"77"', 'secret-var', '9999', 'hidden']) assert.ok(!text.includes(secret), secret);
  });
});

describe('Session partial-frame timer under steady traffic', () => {
  it('never fires while frames keep completing, even when every chunk ends mid-frame', async () => {
    const clock = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    try {
      const config = loadConfig({ env: {}, overrides: { 'backend.url': 'http://127.0.0.1:1', 'limits.partialFrameTimeoutMs': 1000 } });
      const socket = new FakeSocket();
      const gateway = new TestHost(config, new FakeBackend(), 'info');
      const session = new Session(socket, gateway);
      socket.feed(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60000 }));
      const hb = serialize.heartbeatReq(2);
      const stream = Buffer.concat(Array.from({ length: 400 }, () => hb));
      for (let i = 0; i < stream.length; i += 18) { // 18 is not a multiple of 12: chunks end mid-frame
        socket.feed(stream.subarray(i, i + 18));
        await clock.tickAsync(100);
      }
      assert.equal(socket.destroyed, false, session.closeReason);
      assert.equal(socket.replies.filter((m) => m.type === 'HEARTBEAT_CONF').length, 400);
    } finally {
      clock.restore();
    }
  });
});
