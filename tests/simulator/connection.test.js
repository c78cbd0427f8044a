'use strict';

// One RouterConnection on its own, against a scripted host on a real loopback socket: the OPEN
// handshake with version fallback, reply matching in the InvokeBook, heartbeats, and every event
// it documents ('open', 'reply', 'lost', 'down', 'gave-up', 'closed').

const assert = require('node:assert/strict');
const { once } = require('node:events');
const { serialize, STATUS, MESSAGE_TYPES: T } = require('../../lib/protocol');
const { RouterConnection } = require('../../simulator/connection');
const { routerSettings } = require('../../simulator/settings');
const { RunStats } = require('../../simulator/stats');
const { InvokeBook } = require('../../simulator/invoke-book');
const { startFakeHost } = require('../helpers/fake-host');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const logical = () => ({ scheduledAt: performance.now(), outstanding: 0, settled: false });

function connect(port, settings = {}) {
  return new RouterConnection({
    host: '127.0.0.1', port, side: 'A', settings: routerSettings({ sessionRetryMs: 50, ...settings }), stats: new RunStats(),
  });
}

describe('RouterConnection (alone, against a scripted host)', function () {
  this.timeout(10_000);
  let host;
  afterEach(() => host && host.close());

  it('falls back to the next version on E_AG_INVALID_VERSION, on the same connection, then emits open', async () => {
    host = await startFakeHost((m, c) => {
      if (m.typeId !== T.OPEN_REQ) return;
      c.send(m.version === 3 ? serialize.failureConf(m.invokeId, STATUS.E_AG_INVALID_VERSION, 'no') : serialize.openConf(m.invokeId));
    });
    const conn = connect(host.port, { versions: [2, 3] });
    const opened = once(conn, 'open');
    conn.start();
    await opened;
    assert.deepEqual(host.connections[0].received.map((m) => m.version), [3, 2]);
    assert.equal(host.connections.length, 1);
    await conn.stop(0); // this host never answers CLOSE_REQ
  });

  it('matches replies by InvokeID in any order, emits reply once, and flags a second reply as a violation', async () => {
    const queries = [];
    host = await startFakeHost((m, c) => {
      if (m.typeId === T.OPEN_REQ) c.send(serialize.openConf(m.invokeId));
      if (m.typeId === T.QUERY_REQ) queries.push(m.invokeId);
      if (queries.length === 2 && m.typeId === T.QUERY_REQ) {
        c.send(serialize.queryResp({ invokeId: queries[1], status: 0 }));
        c.send(serialize.queryResp({ invokeId: queries[0], status: 0 }));
        c.send(serialize.queryResp({ invokeId: queries[0], status: 0 }));
      }
    });
    const conn = connect(host.port);
    const replies = [];
    conn.on('reply', (l, msg) => replies.push(msg.invokeId));
    conn.start();
    await once(conn, 'open');
    conn.send({ routerCallDay: 1, routerCallKey: 1, subtype: 'a' }, logical());
    conn.send({ routerCallDay: 1, routerCallKey: 2, subtype: 'b' }, logical());
    await wait(200);
    assert.deepEqual(replies, [queries[1], queries[0]]);
    assert.deepEqual({ ...conn.stats.violations }, { 'second reply to one InvokeID': 1 });
    await conn.stop(0); // this host never answers CLOSE_REQ
  });

  it('sends a heartbeat on an idle link and counts its answer', async () => {
    host = await startFakeHost((m, c) => {
      if (m.typeId === T.OPEN_REQ) c.send(serialize.openConf(m.invokeId));
      if (m.typeId === T.HEARTBEAT_REQ) c.send(serialize.heartbeatConf(m.invokeId));
    });
    const conn = connect(host.port, { heartbeatIntervalMs: 100 });
    conn.start();
    await once(conn, 'open');
    await wait(400);
    assert.ok(conn.stats.heartbeats.sent >= 2, JSON.stringify(conn.stats.heartbeats));
    assert.equal(conn.stats.heartbeats.answered, conn.stats.heartbeats.sent);
    assert.equal(await conn.ping() >= 0, true);
    await conn.stop(0); // this host never answers CLOSE_REQ
  });

  it('a host that closes with a query in flight: lost, then down and a reconnect; gave-up after SessionRetryLimit failures', async () => {
    host = await startFakeHost((m, c) => {
      if (m.typeId === T.OPEN_REQ) c.send(serialize.openConf(m.invokeId));
      if (m.typeId === T.QUERY_REQ) c.socket.destroy();
    });
    const conn = connect(host.port, { sessionRetryLimit: 1 });
    const events = [];
    for (const e of ['open', 'lost', 'down', 'gave-up']) conn.on(e, () => events.push(e));
    conn.start();
    await once(conn, 'open');
    conn.send({ routerCallDay: 1, routerCallKey: 1, subtype: 'a' }, logical());
    await once(conn, 'down');
    assert.deepEqual(events.slice(0, 3), ['open', 'lost', 'down']);
    assert.equal(conn.stats.lost, 1);
    await once(conn, 'open'); // a clean close by the host: reconnect at once
    await host.close();
    host = null;
    await once(conn, 'gave-up'); // refused twice: over sessionRetryLimit 1
    assert.ok(events.includes('gave-up'));
    await conn.stop(0); // this host never answers CLOSE_REQ
  });

  it('stop() sends CLOSE_REQ, waits for CLOSE_CONF, then emits closed', async () => {
    host = await startFakeHost((m, c) => {
      if (m.typeId === T.OPEN_REQ) c.send(serialize.openConf(m.invokeId));
      if (m.typeId === T.CLOSE_REQ) c.send(serialize.closeConf(m.invokeId));
    });
    const conn = connect(host.port);
    conn.start();
    await once(conn, 'open');
    const closed = once(conn, 'closed');
    await conn.stop();
    await closed;
    assert.ok(host.connections[0].received.some((m) => m.typeId === T.CLOSE_REQ));
  });
});

describe('InvokeBook', () => {
  it('counts a query sent behind an induced fatal frame as voided, any other as lost, each logical query once', () => {
    const stats = new RunStats();
    const book = new InvokeBook(stats);
    const a = logical();
    const b = logical();
    book.addQuery(1, a);
    book.addInvalid(2, 'garbage', 'fatal');
    book.addQuery(3, b);
    book.addInvalid(4, 'dangling', 'reject');
    const lost = [];
    assert.equal(book.closedByFatal(), 'garbage');
    book.loseAll((l) => lost.push(l));
    assert.deepEqual([stats.lost, stats.voided.queries, stats.voided.reject, stats.caught.fatal], [1, 1, 1, 1]);
    assert.deepEqual(lost, [a, b]);
    assert.deepEqual(stats.injected, { reject: 1, fatal: 1 });
  });

  it('takeReply: once per id; an unknown id and a reply to an invalid frame are violations', () => {
    const stats = new RunStats();
    const book = new InvokeBook(stats);
    book.addQuery(1, logical());
    book.addInvalid(2, 'dangling', 'reject');
    assert.ok(book.takeReply(1));
    assert.equal(book.takeReply(1), undefined);
    assert.equal(book.takeReply(9), undefined);
    assert.equal(book.takeReply(2), undefined);
    assert.deepEqual({ ...stats.violations }, {
      'second reply to one InvokeID': 1, 'reply to an unknown InvokeID': 1, 'invalid frame answered as a query': 1,
    });
  });
});
