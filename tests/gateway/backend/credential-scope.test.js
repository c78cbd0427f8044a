'use strict';

// The CRM's secrets stay with the CRM: backend.headers, backend.headerFiles and backend.auth's
// OAuth2 bearer go to backend.url's origins (both of a balance list) and nowhere else. A real
// gateway process, the customer API with its token endpoint (tests/helpers/real-backend.js) as
// the CRM, and a third-party HTTP server on 127.0.0.1 that records every header it receives:
// a REST route and a handler's ctx.request to it get none of the CRM's, unless the route names
// its own headers or asks for the backend's ("backendCredentials": true).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { tmpDir } = require('../../helpers/tmp');
const { startTestBackend } = require('../../helpers/stack');
const {
  startCustomerApi, startGateway, CLIENT_ID, CLIENT_SECRET,
} = require('../../helpers/real-backend');

const API_KEY = 'crm-api-key-4711';
const FILE_SECRET = 'crm-file-secret-0815';

/** The names of the CRM's secret headers a set of request headers carries. */
function crmSecrets(headers) {
  const found = [];
  if (headers['x-api-key'] === API_KEY) found.push('x-api-key');
  if (headers['x-crm-secret'] === FILE_SECRET) found.push('x-crm-secret');
  if (/^Bearer /.test(headers.authorization || '')) found.push('authorization');
  return found;
}

describe('secrets stay with their origin: backend.headers, headerFiles and auth go to backend.url only', function () {
  this.timeout(60_000);
  let crm;
  let third;
  let mirror;
  let g;
  let client;
  let dir;
  let nextId = 10;

  before(async () => {
    dir = tmpDir('ged145-scope-');
    crm = await startCustomerApi({ tokenLifetimeS: 3600 });
    const crmUrl = `http://127.0.0.1:${crm.port}`;
    third = await startTestBackend((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"score": "7"}');
    });
    // The second origin of backend.url's balance list: answers the default contract.
    mirror = await startTestBackend((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"vars": {"1": "mirror"}}');
    });
    fs.writeFileSync(path.join(dir, 'crm-secret'), `${FILE_SECRET}\n`);
    const handler = (file, body) => {
      fs.writeFileSync(path.join(dir, file), `'use strict';\nmodule.exports = async (query, ctx) => {\n${body}\n};\n`);
      return path.join(dir, file);
    };
    const mixed = `  const risk = (await ctx.request('${third.url}/score/' + query.clid)).json();
  const crm = await ctx.request('${crmUrl}/customers?phone=' + query.clid);
  return { vars: { 1: risk.score, 2: crm.json().customer.tier } };`;
    const own = `  const risk = await ctx.request('${third.url}/score/' + query.clid, { headers: { 'X-Third-Key': 'third-key' } });
  return { vars: { 1: risk.json().score } };`;
    const route = (extra) => ({ method: 'GET', url: `${third.url}/score/{clid}`, response: { 'vars.1': 'score' }, ...extra });
    g = await startGateway({
      backend: {
        url: [crmUrl, mirror.url],
        strategy: 'balance',
        headers: { 'X-Api-Key': API_KEY },
        headerFiles: { 'X-Crm-Secret': 'crm-secret' },
        auth: {
          type: 'oauth2', tokenUrl: `${crmUrl}/oauth/token`, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET,
        },
      },
      routes: {
        cust: { method: 'GET', url: `${crmUrl}/customers?phone={clid}`, response: { 'vars.1': 'customer.tier' } },
        risk: route({}),
        riskOwn: route({ headers: { 'X-Third-Key': 'third-key' } }),
        riskShared: route({ backendCredentials: true }),
        mixed: { module: handler('mixed.js', mixed) },
        mixedOwn: { module: handler('own.js', own) },
        mixedShared: { module: handler('shared.js', mixed), backendCredentials: true },
      },
    }, { dir });
    client = await WireClient.connect(g.port);
    await client.open();
  });

  after(async () => {
    if (client) client.close();
    if (g) await g.stop();
    for (const s of [crm, third, mirror]) if (s) await s.close();
  });

  /** n queries of subtype, one at a time; their replies. */
  async function ask(subtype, n) {
    const replies = [];
    for (let i = 0; i < n; i++) {
      const id = nextId++;
      client.query(id, { subtype, clid: '5551000010' });
      replies.push(await client.waitFor((m) => m.invokeId === id));
    }
    return replies;
  }

  /** What the third party received from the queries run by fn: the CRM secrets in each request. */
  async function thirdSees(fn) {
    const before = third.requests.length;
    await fn();
    return third.requests.slice(before).map((r) => crmSecrets(r.headers));
  }

  it('the CRM itself (a route on its origin, and both origins of the balance list) gets every secret', async () => {
    const before = crm.lookupHeaders.length;
    const replies = await ask('cust', 3);
    assert.ok(replies.every((m) => m.type === 'QUERY_RESP' && m.vars[1] === 'gold'), JSON.stringify(replies));
    for (const h of crm.lookupHeaders.slice(before)) assert.deepEqual(crmSecrets(h), ['x-api-key', 'x-crm-secret', 'authorization']);
    const mirrorBefore = mirror.requests.length;
    await ask('contract', 4); // the default contract, balanced over both origins
    const mirrored = mirror.requests.slice(mirrorBefore);
    assert.equal(mirrored.length, 2);
    for (const r of mirrored) assert.deepEqual(crmSecrets(r.headers), ['x-api-key', 'x-crm-secret', 'authorization']);
  });

  it('a third-party route gets none of them', async () => {
    const seen = await thirdSees(async () => {
      const replies = await ask('risk', 3);
      assert.ok(replies.every((m) => m.type === 'QUERY_RESP' && m.vars[1] === '7'));
    });
    assert.deepEqual(seen, [[], [], []]);
  });

  it("a handler's ctx.request to the third party gets none of them; its request to the CRM, in the same query, gets them all", async () => {
    const before = crm.lookupHeaders.length;
    const seen = await thirdSees(async () => {
      const replies = await ask('mixed', 3);
      assert.ok(replies.every((m) => m.type === 'QUERY_RESP' && m.vars[1] === '7' && m.vars[2] === 'gold'), JSON.stringify(replies));
    });
    assert.deepEqual(seen, [[], [], []]);
    for (const h of crm.lookupHeaders.slice(before)) assert.deepEqual(crmSecrets(h), ['x-api-key', 'x-crm-secret', 'authorization']);
  });

  it('a route or a ctx.request that names its own headers gets those only', async () => {
    for (const subtype of ['riskOwn', 'mixedOwn']) {
      const before = third.requests.length;
      const seen = await thirdSees(() => ask(subtype, 2));
      assert.deepEqual(seen, [[], []], subtype);
      assert.ok(third.requests.slice(before).every((r) => r.headers['x-third-key'] === 'third-key'), subtype);
    }
  });

  it('"backendCredentials": true on a route (REST or module) sends them to its origin: the opt-in', async () => {
    for (const subtype of ['riskShared', 'mixedShared']) {
      const seen = await thirdSees(async () => {
        const replies = await ask(subtype, 2);
        assert.ok(replies.every((m) => m.type === 'QUERY_RESP'), JSON.stringify(replies));
      });
      assert.deepEqual(seen, [['x-api-key', 'x-crm-secret', 'authorization'], ['x-api-key', 'x-crm-secret', 'authorization']], subtype);
    }
  });

  it('the start says which routes go without them', async () => {
    const lines = g.gw.err.split('\n').filter((l) => l.includes("backend.headers and backend.auth go to backend.url's origins only"));
    assert.equal(lines.length, 1, g.gw.err);
    assert.ok(lines[0].includes(`${third.url} get neither`), lines[0]);
    assert.match(lines[0], /"backendCredentials": true/);
  });

  it('a route on another origin without a secret of its own is not an unknown caller when that API wants one: it is its 401, a host error', async () => {
    // The CRM reached through a second name of its own origin would be in scope; a real third
    // party that wants a key answers 401, which is the gateway's credentials refused, not the caller.
    const picky = await startTestBackend((req, res) => {
      res.writeHead(req.headers['x-api-key'] ? 200 : 401, { 'content-type': 'application/json' });
      res.end(req.headers['x-api-key'] ? '{"score": "1"}' : '{"error": "no key"}');
    });
    const g2 = await startGateway({
      backend: { url: `http://127.0.0.1:${crm.port}`, headers: { 'X-Api-Key': API_KEY } },
      routes: { risk: { method: 'GET', url: `${picky.url}/score/{clid}`, response: { 'vars.1': 'score' } } },
      breaker: false,
    }, { dir });
    const c2 = await WireClient.connect(g2.port);
    try {
      await c2.open();
      c2.query(5, { subtype: 'risk', clid: '5551000010' });
      const m = await c2.waitFor((x) => x.invokeId === 5);
      assert.equal(m.type, 'FAILURE_CONF');
      assert.equal(m.status, STATUS.E_AG_HOST_ERROR1);
      assert.deepEqual(picky.requests.map((r) => crmSecrets(r.headers)), [[]]);
    } finally {
      c2.close();
      await g2.stop();
      await picky.close();
    }
  });
});
