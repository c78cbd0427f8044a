'use strict';

// Queries end to end: router socket -> gateway -> real HTTP backend -> reply, with both HTTP
// engines, against the REST simulator and against a test backend that fails in each way.

const { ENGINE_NAMES } = require('../../../gateway/backend/engines');
const assert = require('node:assert/strict');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');

for (const engine of ENGINE_NAMES) {
  describe(`queries through the gateway (${engine})`, () => {
    let stack;
    let client;
    let seq = 100;
    before(async () => {
      stack = await startStack({ gateway: { 'backend.engine': engine, deadlineMs: 250 } });
    });
    after(() => stack.stop());
    beforeEach(async () => {
      client = await WireClient.connect(stack.port);
      await client.open();
    });
    afterEach(() => client.close());

    async function ask(fields) {
      const id = seq++;
      client.query(id, fields);
      return client.waitFor((m) => m.invokeId === id);
    }

    it('echo: the variables, ECC and ECC arrays come back as QUERY_RESP status 0', async () => {
      const r = await ask({
        subtype: 'echo', vars: { 1: 'a', 10: 'ten' }, ecc: { 'user.x': 'y' }, eccArrays: [{ name: 'user.h', index: 3, value: 'z' }],
      });
      assert.equal(r.type, 'QUERY_RESP');
      assert.equal(r.status, 0);
      assert.deepEqual(r.vars, { 1: 'a', 10: 'ten' });
      assert.deepEqual(r.ecc, { 'user.x': 'y' });
      assert.deepEqual(r.eccArrays, [{ name: 'user.h', index: 3, value: 'z' }]);
    });

    it('customer.lookup: a known CLID answers from the customer record', async () => {
      const r = await ask({ subtype: 'customer.lookup', clid: '5551000042' });
      assert.equal(r.status, 0);
      const c = stack.sim.state.customers.byClid.get('5551000042');
      assert.deepEqual(r.vars, { 1: c.accountId, 2: c.tier, 3: c.balance, 4: c.skillGroup, 5: c.language });
      assert.equal(r.ecc['user.name'], c.name);
    });

    it('customer.lookup: an unknown CLID (404 with {error}) is E_AG_HOST_ERROR2 with the text', async () => {
      const r = await ask({ subtype: 'customer.lookup', clid: '123' });
      assert.equal(r.type, 'FAILURE_CONF');
      assert.equal(r.status, STATUS.E_AG_HOST_ERROR2);
      assert.equal(r.error, 'no customer with CLID 123');
    });

    const failures = [
      ['fail (HTTP 500)', 'fail', STATUS.E_AG_HOST_ERROR1, /HTTP 500/],
      ['reject (HTTP 422)', 'reject', STATUS.E_AG_HOST_ERROR2, /request rejected/],
      ['garbage (not JSON)', 'garbage', STATUS.E_AG_HOST_ERROR1, /not JSON/],
      ['reset (connection destroyed)', 'reset', STATUS.E_AG_HOST_ERROR1, /backend (reset|error)/],
      ['an unknown subtype (404)', 'no.such.thing', STATUS.E_AG_HOST_ERROR2, /unknown subtype/],
    ];
    for (const [what, subtype, status, text] of failures) {
      it(`${what} -> FAILURE_CONF ${status === 6 ? 'E_AG_HOST_ERROR1' : 'E_AG_HOST_ERROR2'}`, async () => {
        const r = await ask({ subtype });
        assert.equal(r.type, 'FAILURE_CONF');
        assert.equal(r.status, status);
        assert.match(r.error, text);
      });
    }

    it('hang: answered E_AG_HOST_ERROR1 at the deadline, before the router would give up', async () => {
      const t0 = performance.now();
      const r = await ask({ subtype: 'hang' });
      const took = performance.now() - t0;
      assert.equal(r.status, STATUS.E_AG_HOST_ERROR1);
      assert.match(r.error, /within 250 ms/);
      assert.ok(took >= 240, `answered after ${took.toFixed(0)} ms, before the deadline`);
    });

    it('a backend slower than the deadline: one FAILURE_CONF, the late answer is dropped', async () => {
      const id = seq++;
      client.query(id, { subtype: 'slow', vars: { 1: '400' } });
      const r = await client.waitFor((m) => m.invokeId === id);
      assert.equal(r.status, STATUS.E_AG_HOST_ERROR1);
      await new Promise((res) => setTimeout(res, 300));
      assert.equal(client.messages.filter((m) => m.invokeId === id).length, 1);
    });

    it('NoScriptReply: the backend is called and the reply is QUERY_RESP status 0 with no tags', async () => {
      const before = (stack.sim.state.stats.routes['POST /query/echo'] || {})['200'] || 0;
      const r = await ask({ subtype: 'echo', noScriptReply: true, vars: { 1: 'x' } });
      assert.equal(r.type, 'QUERY_RESP');
      assert.equal(r.status, 0);
      assert.equal(r.vars, undefined);
      const afterCount = stack.sim.state.stats.routes['POST /query/echo']['200'];
      assert.equal(afterCount, before + 1);
    });
  });
}

describe('queries against a backend that misbehaves', () => {
  let backend;
  let stack;
  let client;
  let behaviour;
  before(async () => {
    backend = await startTestBackend((req, res, entry) => behaviour(req, res, entry));
  });
  after(() => backend.close());
  afterEach(async () => {
    if (client) client.close();
    if (stack) await stack.stop();
    client = null;
    stack = null;
  });

  async function start(gateway = {}) {
    stack = await startStack({ backendUrl: backend.url, gateway: { deadlineMs: 250, ...gateway } });
    client = await WireClient.connect(stack.port);
    await client.open();
  }

  it('forwards the query in the default contract: POST /query/{subtype} with the query JSON', async () => {
    behaviour = (req, res) => res.end('{}');
    await start();
    client.query(5, {
      subtype: 'acct.lookup', clid: '5551234567', ced: '12#', cdpd: '9', routingClient: 'RC', dn: '800', duplicate: true, vars: { 2: 'v' }, ecc: { 'a.b': 'c' },
    });
    await client.waitFor((m) => m.invokeId === 5);
    const req = backend.requests.at(-1);
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/query/acct.lookup');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(req.body), {
      subtype: 'acct.lookup', invokeId: 5, routerCallDay: 1, routerCallKey: 5, duplicate: true, noScriptReply: false, ced: '12#', clid: '5551234567', cdpd: '9',
      routingClient: 'RC', dn: '800', vars: { 2: 'v' }, ecc: { 'a.b': 'c' },
    });
  });

  it('duplicates: answer-empty replies QUERY_RESP with no tags without calling the backend', async () => {
    behaviour = (req, res) => res.end('{"vars": {"1": "x"}}');
    await start({ duplicates: 'answer-empty' });
    const before = backend.requests.length;
    client.query(6, { subtype: 'x', duplicate: true });
    const r = await client.waitFor((m) => m.invokeId === 6);
    assert.equal(r.type, 'QUERY_RESP');
    assert.equal(r.vars, undefined);
    assert.equal(backend.requests.length, before);
  });

  it('a backend down at start answers E_AG_HOST_ERROR1 at once, and recovers when it comes up', async () => {
    const dead = await startTestBackend((req, res) => res.end('{"vars":{"1":"up"}}'));
    const { url, port } = dead;
    await dead.close();
    stack = await startStack({ backendUrl: url, gateway: { deadlineMs: 250 } });
    client = await WireClient.connect(stack.port);
    await client.open();
    client.query(7, { subtype: 'x' });
    const r = await client.waitFor((m) => m.invokeId === 7);
    assert.equal(r.status, STATUS.E_AG_HOST_ERROR1);
    assert.match(r.error, /unreachable/);
    const http = require('node:http');
    const revived = http.createServer((req, res) => req.resume().on('end', () => res.end('{"vars":{"1":"up"}}')));
    await new Promise((res) => revived.listen(port, '127.0.0.1', res));
    try {
      client.query(8, { subtype: 'x' });
      const ok = await client.waitFor((m) => m.invokeId === 8);
      assert.deepEqual(ok.vars, { 1: 'up' });
    } finally {
      revived.closeAllConnections();
      await new Promise((res) => revived.close(res));
    }
  });

  it('a body over backend.maxResponseBytes is E_AG_HOST_ERROR1, read no further', async () => {
    behaviour = (req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(`{"vars":{"1":"${'x'.repeat(200_000)}"}}`);
    };
    await start({ 'backend.maxResponseBytes': 65536 });
    client.query(9, { subtype: 'big' });
    const r = await client.waitFor((m) => m.invokeId === 9);
    assert.equal(r.status, STATUS.E_AG_HOST_ERROR1);
    assert.match(r.error, /too large/);
  });

  it('answers that do not fit GED-145 are made to fit: truncated, ASCII, invalid parts dropped', async () => {
    behaviour = (req, res) => res.end(JSON.stringify({
      vars: { 1: 'y'.repeat(300), 2: 42, 3: 'Jos\u00e9', 11: 'no such var', 4: { nested: true } },
      ecc: { 'user.ok': 'v'.repeat(300), ['n'.repeat(40)]: 'too long a name' },
      eccArrays: [{ name: 'user.arr', index: 1, value: 'ok' }, { name: 'bad', index: 999, value: 'x' }],
      ced: '1234',
    }));
    await start();
    client.query(10, { subtype: 'x' });
    const r = await client.waitFor((m) => m.invokeId === 10);
    assert.equal(r.status, 0);
    assert.deepEqual(r.vars, { 1: 'y'.repeat(255), 2: '42', 3: 'Jose' });
    assert.deepEqual(r.ecc, { 'user.ok': 'v'.repeat(210) });
    assert.deepEqual(r.eccArrays, [{ name: 'user.arr', index: 1, value: 'ok' }]);
    assert.equal(r.ced, '1234');
    const warn = stack.log.lines.find((l) => l.message === 'backend answer adjusted to fit GED-145');
    assert.ok(warn && warn.changes.length >= 5, JSON.stringify(warn));
  });

  it('a router that disconnects mid-query: its HTTP requests are aborted and the in-flight gauge returns to 0', async () => {
    const held = [];
    behaviour = (req, res) => held.push(res);
    await start({ deadlineMs: 5000 });
    for (let i = 0; i < 50; i++) client.query(100 + i, { subtype: 'held' });
    const until = Date.now() + 3000;
    while (held.length < 50 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    assert.equal(held.length, 50);
    assert.equal(stack.gateway.inFlight(), 50);
    assert.match(await stack.gw.metrics(), /ged145_queries_in_flight 50\n/);
    client.socket.resetAndDestroy(); // a reset: the router is gone (a FIN alone is a half-close, answered first)
    while (backend.requests.slice(-50).some((e) => !e.closed) && Date.now() < until + 2000) await new Promise((r) => setTimeout(r, 10));
    assert.ok(backend.requests.slice(-50).every((e) => e.closed), 'every backend request was aborted');
    assert.equal(stack.gateway.inFlight(), 0);
    const metrics = await stack.gw.metrics();
    assert.match(metrics, /ged145_queries_in_flight 0\n/);
  });
});
