'use strict';

const assert = require('node:assert/strict');
const net = require('node:net');
const { startRestSim } = require('../../rest-sim/server');
const { clidOf } = require('../../rest-sim/customers');

describe('REST simulator', () => {
  let sim;
  before(async () => {
    sim = await startRestSim({ port: 0, customers: 1000, seed: 7 });
  });
  after(() => sim.close());
  afterEach(async () => {
    await fetch(`${sim.url}/admin/reset`, { method: 'POST' });
  });

  const post = (subtype, body = {}, opts = {}) => fetch(`${sim.url}/query/${subtype}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...opts,
  });

  it('echo returns the vars, ecc and eccArrays it received', async () => {
    const q = { vars: { 1: 'a' }, ecc: { 'x.y': 'z' }, eccArrays: [{ name: 'n', index: 1, value: 'v' }] };
    const res = await post('echo', q);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), q);
  });

  it('customer.lookup answers a deterministic customer by CLID, 404 {error} for an unknown one', async () => {
    const res = await post('customer.lookup', { clid: clidOf(42) });
    const body = await res.json();
    assert.equal(res.status, 200);
    assert.equal(body.vars[1], 'A100042');
    assert.ok(['bronze', 'silver', 'gold', 'platinum'].includes(body.vars[2]));
    assert.equal(body.ecc['user.acct'], 'A100042');
    const again = await startRestSim({ port: 0, customers: 1000, seed: 7 });
    try {
      assert.deepEqual(await (await fetch(`${again.url}/customers/${clidOf(42)}`)).json(), await (await fetch(`${sim.url}/customers/${clidOf(42)}`)).json());
    } finally {
      await again.close();
    }
    const missing = await post('customer.lookup', { clid: '1' });
    assert.equal(missing.status, 404);
    assert.match((await missing.json()).error, /no customer/);
  });

  it('slow answers like echo after VAR1 milliseconds', async () => {
    const t0 = Date.now();
    const res = await post('slow', { vars: { 1: '120' } });
    assert.equal(res.status, 200);
    assert.ok(Date.now() - t0 >= 110);
    assert.deepEqual((await res.json()).vars, { 1: '120' });
  });

  it('fail is 500 {error}, reject is 422 {error}, unknown subtypes 404', async () => {
    assert.equal((await post('fail')).status, 500);
    const r = await post('reject');
    assert.equal(r.status, 422);
    assert.ok((await r.json()).error);
    const u = await post('nope');
    assert.equal(u.status, 404);
    assert.deepEqual(await u.json(), { error: 'unknown subtype' });
  });

  it('garbage is HTTP 200 with a body that is not JSON', async () => {
    const r = await post('garbage');
    assert.equal(r.status, 200);
    await assert.rejects(r.json());
  });

  it('reset destroys the connection without an answer', async () => {
    await assert.rejects(post('reset'));
  });

  it('hang never answers until the client gives up', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    await assert.rejects(post('hang', {}, { signal: ac.signal }), /abort/i);
    assert.equal(sim.state.stats.routes['POST /query/hang'].hang, 1);
  });

  it('serves an ordinary REST interface: GET /customers/:ani and GET /accounts/:id/balance', async () => {
    const c = await (await fetch(`${sim.url}/customers/${clidOf(7)}`)).json();
    assert.equal(c.clid, clidOf(7));
    const b = await (await fetch(`${sim.url}/accounts/${c.accountId}/balance`)).json();
    assert.deepEqual(b, { accountId: c.accountId, balance: c.balance, currency: 'USD' });
    assert.equal((await fetch(`${sim.url}/accounts/nope/balance`)).status, 404);
  });

  describe('fault injection', () => {
    const setFaults = async (f) => {
      const r = await fetch(`${sim.url}/admin/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(f) });
      return { status: r.status, body: await r.json() };
    };

    it('added fixed latency delays every request', async () => {
      await setFaults({ latency: 100 });
      const t0 = Date.now();
      await (await fetch(`${sim.url}/customers/${clidOf(1)}`)).json();
      assert.ok(Date.now() - t0 >= 95);
    });

    it('uniform and normal latency stay around their mean', async () => {
      for (const latencyDist of ['uniform', 'normal']) {
        await setFaults({ latency: 20, latencySpread: 10, latencyDist });
        const draws = Array.from({ length: 2000 }, () => sim.state.faults.drawLatency());
        const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
        assert.ok(mean > 17 && mean < 23, `${latencyDist} mean ${mean}`);
        assert.ok(draws.every((d) => d >= 0));
        if (latencyDist === 'uniform') assert.ok(draws.every((d) => d >= 10 && d <= 30));
      }
    });

    it('errorRate 1 answers every request 500, resetRate 1 resets, hangRate 1 hangs', async () => {
      await setFaults({ errorRate: 1 });
      assert.equal((await fetch(`${sim.url}/customers/${clidOf(1)}`)).status, 500);
      await setFaults({ errorRate: 0, resetRate: 1 });
      await assert.rejects(fetch(`${sim.url}/customers/${clidOf(1)}`));
      await setFaults({ resetRate: 0, hangRate: 1 });
      await assert.rejects(fetch(`${sim.url}/customers/${clidOf(1)}`, { signal: AbortSignal.timeout(150) }));
    });

    it('rates in between hit about that share of requests', async () => {
      await setFaults({ errorRate: 0.3 });
      let errors = 0;
      for (let i = 0; i < 300; i++) if ((await fetch(`${sim.url}/customers/${clidOf(1)}`)).status === 500) errors++;
      assert.ok(errors > 50 && errors < 130, `${errors} of 300`);
    });

    it('rejects bad settings with 400 and names the setting', async () => {
      assert.deepEqual((await setFaults({ errorRate: 2 })).status, 400);
      assert.match((await setFaults({ nope: 1 })).body.error, /nope/);
      assert.match((await setFaults({ latencyDist: 'zipf' })).body.error, /latencyDist/);
    });

    it('GET /admin/stats counts requests by route and outcome; POST /admin/reset clears faults and stats', async () => {
      await post('echo');
      await post('fail');
      await fetch(`${sim.url}/customers/${clidOf(3)}`);
      await post('something-else');
      const stats = await (await fetch(`${sim.url}/admin/stats`)).json();
      assert.equal(stats.routes['POST /query/echo']['200'], 1);
      assert.equal(stats.routes['POST /query/fail']['500'], 1);
      assert.equal(stats.routes['GET /customers/:ani']['200'], 1);
      assert.equal(stats.routes['POST /query/(unknown)']['404'], 1);
      await setFaults({ latency: 5 });
      await fetch(`${sim.url}/admin/reset`, { method: 'POST' });
      assert.equal((await (await fetch(`${sim.url}/admin/stats`)).json()).total, 0);
      assert.equal((await (await fetch(`${sim.url}/admin/faults`)).json()).latency, 0);
    });
  });

  it('listens on port 0 and gives the port back; close() ends hung requests too', async () => {
    const s = await startRestSim({ port: 0, faults: { hangRate: 1 } });
    assert.ok(s.port > 0);
    const sock = net.connect(s.port, '127.0.0.1');
    sock.on('error', () => {});
    sock.write('GET /customers/1 HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((r) => setTimeout(r, 50));
    await s.close();
    await new Promise((r) => (sock.destroyed ? r() : sock.on('close', r)));
  });
});
