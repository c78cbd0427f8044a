'use strict';

// The session state machine over a real socket against the real REST simulator.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { serialize, STATUS } = require('../../../lib/protocol');
const { WireClient, exactlyOnce } = require('../../helpers/wire');
const { startStack } = require('../../helpers/stack');

const vectors = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'vectors.json'), 'utf8'));

describe('gateway sessions', () => {
  let stack;
  let client;
  before(async () => {
    // A generous deadline: this suite checks the protocol, not the backend's speed under a burst.
    stack = await startStack({ gateway: { 'protocol.versions': [2, 3], deadlineMs: 3000 } });
  });
  after(() => stack.stop());
  beforeEach(async () => {
    client = await WireClient.connect(stack.port);
  });
  afterEach(() => client.close());

  it('answers OPEN_REQ with OPEN_CONF and keeps ConnectInfo and the peer for /sessions', async () => {
    const reply = await client.open({ invokeId: 11, config: 'side-A lab' });
    assert.equal(reply.type, 'OPEN_CONF');
    assert.equal(reply.invokeId, 11);
    const sessions = await (await fetch(`http://127.0.0.1:${stack.adminPort}/sessions`)).json();
    const mine = sessions.find((s) => s.connectInfo === 'side-A lab');
    assert.ok(mine, JSON.stringify(sessions));
    assert.equal(mine.state, 'open');
    assert.match(mine.peer, /^127\.0\.0\.1:\d+$/);
  });

  it('refuses a second OPEN_REQ with E_AG_SESSION_ACTIVE and stays open', async () => {
    await client.open();
    client.send(serialize.openReq({ invokeId: 2, version: 2, idleTimeoutMs: 60000 }));
    const reply = await client.waitFor((m) => m.invokeId === 2);
    assert.equal(reply.type, 'FAILURE_CONF');
    assert.equal(reply.status, STATUS.E_AG_SESSION_ACTIVE);
    client.send(serialize.heartbeatReq(3));
    assert.equal((await client.waitFor((m) => m.invokeId === 3)).type, 'HEARTBEAT_CONF');
  });

  it('refuses an unsupported version with E_AG_INVALID_VERSION, then opens with a supported one', async () => {
    client.send(serialize.openReq({ invokeId: 1, version: 9, idleTimeoutMs: 60000 }));
    const refused = await client.waitFor((m) => m.invokeId === 1);
    assert.equal(refused.status, STATUS.E_AG_INVALID_VERSION);
    assert.equal((await client.open({ invokeId: 2, version: 3 })).type, 'OPEN_CONF');
  });

  it('answers QUERY_REQ and PARAM_REQ before OPEN_REQ with E_AG_SESSION_INACTIVE', async () => {
    client.query(5, { subtype: 'echo' });
    client.send(serialize.paramReq({ invokeId: 6, paramId: 1, paramValue: 2 }));
    const [q, p] = await client.waitForCount(2);
    assert.deepEqual([q.invokeId, q.status], [5, STATUS.E_AG_SESSION_INACTIVE]);
    assert.deepEqual([p.invokeId, p.status], [6, STATUS.E_AG_SESSION_INACTIVE]);
  });

  it('answers PARAM_REQ with PARAM_CONF', async () => {
    await client.open();
    client.send(serialize.paramReq({ invokeId: 7, paramId: 1, paramValue: 30 }));
    assert.equal((await client.waitFor((m) => m.invokeId === 7)).type, 'PARAM_CONF');
  });

  it('answers heartbeats at once while queries wait on a slow backend', async () => {
    await client.open();
    for (let i = 0; i < 20; i++) client.query(100 + i, { subtype: 'slow', vars: { 1: '150' } });
    client.send(serialize.heartbeatReq(99));
    const hb = await client.waitFor((m) => m.invokeId === 99);
    assert.equal(hb.type, 'HEARTBEAT_CONF');
    const queryRepliesBeforeHeartbeat = client.messages.slice(0, client.messages.indexOf(hb)).filter((m) => m.invokeId >= 100);
    assert.equal(queryRepliesBeforeHeartbeat.length, 0, 'the heartbeat did not wait behind the queries');
    await client.waitForCount(1 + 1 + 20);
  });

  it('answers CLOSE_REQ only after the queries in flight, keeps the connection, then refuses queries', async () => {
    await client.open();
    client.query(10, { subtype: 'slow', vars: { 1: '80' } });
    client.query(11, { subtype: 'echo' });
    client.send(serialize.closeReq(12));
    const close = await client.waitFor((m) => m.type === 'CLOSE_CONF');
    assert.equal(close.invokeId, 12);
    const order = client.messages.map((m) => m.invokeId);
    assert.ok(order.indexOf(10) < order.indexOf(12) && order.indexOf(11) < order.indexOf(12), `order ${order}`);
    client.query(13, { subtype: 'echo' });
    const after = await client.waitFor((m) => m.invokeId === 13);
    assert.equal(after.status, STATUS.E_AG_SESSION_INACTIVE);
    assert.equal(client.closed, false, 'a CLOSE_REQ alone never drops the connection');
  });

  it('answers every invalid vector as the vector says, and the session carries on', async () => {
    await client.open();
    const rejects = vectors.invalid.filter((v) => v.expect.kind === 'reject');
    for (const v of rejects) client.send(Buffer.from(v.hex, 'hex'));
    client.send(serialize.heartbeatReq(500));
    await client.waitFor((m) => m.invokeId === 500);
    const answers = client.messages.slice(1, -1);
    assert.equal(answers.length, rejects.length);
    rejects.forEach((v, i) => {
      const a = answers[i];
      if (v.expect.invokeId === undefined) {
        assert.equal(a.type, 'FAILURE_EVENT', v.name);
      } else {
        assert.equal(a.type, 'FAILURE_CONF', v.name);
        assert.equal(a.invokeId, v.expect.invokeId, v.name);
      }
      assert.equal(a.status, v.expect.status, v.name);
    });
  });

  it('closes only the offending connection on a fatal frame', async () => {
    const other = await WireClient.connect(stack.port);
    try {
      await other.open({ config: 'bystander' });
      await client.open();
      client.send(Buffer.from(vectors.invalid.find((v) => v.expect.kind === 'fatal').hex, 'hex'));
      await client.waitClosed();
      const event = client.messages.find((m) => m.type === 'FAILURE_EVENT');
      assert.equal(event && event.status, STATUS.E_AG_INVALID_MESSAGE);
      other.query(2, { subtype: 'echo', vars: { 1: 'still here' } });
      const reply = await other.waitFor((m) => m.invokeId === 2);
      assert.deepEqual(reply.vars, { 1: 'still here' });
    } finally {
      other.close();
    }
  });

  it('answers 500 pipelined queries in one write exactly once each', async () => {
    await client.open();
    const ids = Array.from({ length: 500 }, (_, i) => 1000 + i);
    client.send(Buffer.concat(ids.map((id) => serialize.queryReq({
      invokeId: id, routerCallDay: 1, routerCallKey: id, subtype: 'echo', vars: { 1: String(id) },
    }))));
    await client.waitForCount(1 + ids.length, 10_000);
    await new Promise((r) => setTimeout(r, 100)); // a second reply would arrive now
    const replies = client.messages.slice(1);
    assert.deepEqual(exactlyOnce(replies, ids), { missing: [], duplicated: [] });
    for (const r of replies) assert.deepEqual(r.vars, { 1: String(r.invokeId) }, JSON.stringify(r));
  });

  it('reassembles queries sent one byte at a time', async () => {
    await client.open();
    const frame = serialize.queryReq({ invokeId: 77, routerCallDay: 1, routerCallKey: 2, subtype: 'echo', ecc: { 'user.a': 'b' } }, { nul: true });
    for (const b of frame) {
      client.send(Buffer.from([b]));
      await new Promise((r) => setImmediate(r));
    }
    const reply = await client.waitFor((m) => m.invokeId === 77);
    assert.deepEqual(reply.ecc, { 'user.a': 'b' });
  });
});
