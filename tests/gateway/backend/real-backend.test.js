'use strict';

// A customer API set up as enterprise APIs are, from real parts (tests/helpers/real-backend.js):
// a real nginx with TLS from a private CA made here, keep-alive closed after 2 s and 100
// requests, OAuth2 client-credentials tokens that expire, a real tinyproxy as the forward proxy;
// a real gateway process configured with nothing but its config file. Every assertion counts
// outcomes over real sockets.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { STATUS } = require('../../../lib/protocol');
const { WireClient, exactlyOnce } = require('../../helpers/wire');
const {
  startRealApi, startNginx, startTinyproxy, startGateway, burst, opensslVerifies, clidOf, CLIENT_SECRET, KNOWN,
} = require('../../helpers/real-backend');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));


/**
 * The route of the issue: GET /customers?phone=..., a nested answer mapped to VAR and ECC tags.
 * No backend.url: the route asks for backend.auth (backendCredentials), the API's own credentials.
 */
const custRoute = (base) => ({
  method: 'GET',
  url: `${base}/customers?phone={clid}`,
  backendCredentials: true,
  response: { 'vars.1': 'customer.tier', 'vars.2': 'customer.agentGroup', 'ecc.user.balance': 'customer.balance' },
});

const atDeadline = (reply) => reply.type === 'FAILURE_CONF' && reply.status === STATUS.E_AG_HOST_ERROR1 && /did not answer within/.test(reply.error);

/**
 * Asserts what the router must get for each record: the mapped tags for a known caller, E_AG_HOST_ERROR2 for an unknown one, in
 * time. `deadlineShare`: the share of known callers that may instead get the gateway's own deadline answer (E_AG_HOST_ERROR1,
 * "did not answer within"), for bursts whose backend round trips sit near 250 ms on a slow machine; anything else is wrong.
 */
function assertAnswered(records, { deadlineShare = 0 } = {}) {
  const late = records.filter((r) => r.latencyMs >= 300);
  assert.deepEqual(late.map((r) => [r.id, Math.round(r.latencyMs)]), [], 'no reply later than the router\'s 300 ms');
  const cut = records.filter((r) => KNOWN.test(r.clid) && atDeadline(r.reply));
  assert.ok(cut.length <= deadlineShare * records.length, `${cut.length} of ${records.length} known callers answered at the deadline`);
  for (const { clid, reply } of records) {
    if (KNOWN.test(clid) && atDeadline(reply)) continue;
    if (KNOWN.test(clid)) {
      assert.equal(reply.type, 'QUERY_RESP', `${clid}: ${JSON.stringify(reply)}`);
      assert.equal(reply.vars[1], clid.endsWith('0') ? 'gold' : 'silver');
      assert.equal(reply.vars[2], `ag-${clid.slice(-2)}`);
      assert.equal(reply.ecc['user.balance'], '12.5');
    } else {
      assert.equal(reply.type, 'FAILURE_CONF', `${clid}: ${JSON.stringify(reply)}`);
      assert.equal(reply.status, STATUS.E_AG_HOST_ERROR2);
    }
  }
}

describe('a real backend: nginx with TLS from a private CA, OAuth2, a forward proxy', function () {
  this.timeout(90_000);
  let real;
  let certs;
  let api;
  let nginx;
  let dir;
  before(async () => {
    real = await startRealApi({ tokenLifetimeS: 3 });
    ({
      certs, api, nginx, dir,
    } = real);
    assert.ok(opensslVerifies(nginx.port, certs.ca), 'nginx serves the chain of the test CA');
  });
  after(async () => {
    if (real) await real.close();
  });

  const oauth = (extra = {}) => ({
    type: 'oauth2', tokenUrl: `${nginx.url}/oauth/token`, clientId: 'ged145', clientSecretFile: 'crm-client-secret', scope: 'customers.read', ...extra,
  });
  // 16 connections: a cold burst that opens 64 TLS connections at once (RSA handshakes on nginx's one worker, tinyproxy's
  // tunnels) can miss the 250 ms deadline on a slow 2-core machine, on the old code too.
  const configWith = (backend = {}) => ({
    backend: { tls: { ca: certs.ca }, auth: oauth(), connections: 16, ...backend }, routes: { cust: custRoute(nginx.url) },
  });

  it('configuration alone: bursts after idle gaps of 1.9-2.6 s while tokens expire every 3 s, every caller answered in time, the secret nowhere', async () => {
    const before = { ...api.stats };
    const g = await startGateway(configWith(), { dir, env: { CREDENTIALS_DIRECTORY: dir } });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const records = [];
      let next = 10;
      for (const [i, n] of [220, 260, 300, 240].entries()) {
        records.push(...await burst(client, { first: next, n, clidOf }));
        next += n;
        if (i < 3) await wait(1900 + ((i * 350) % 700));
      }
      const ids = records.map((r) => r.id);
      assert.deepEqual(exactlyOnce(client.messages.slice(1), ids), { missing: [], duplicated: [] });
      // What this test is about is the token: no expired or unknown token presented, no auth failure. The bursts
      // themselves sit near the deadline on a slow 2-core machine (2.4 % cut on a quiet one; the code before the
      // structural split failed here too), so 5 % may be cut; every other reply stays exact and in time.
      assertAnswered(records, { deadlineShare: 0.05 });
      assert.equal(api.stats.expiredPresented - before.expiredPresented, 0, 'no expired token ever presented');
      assert.equal(api.stats.unknownToken - before.unknownToken, 0);
      const tokens = api.stats.tokenRequests - before.tokenRequests;
      assert.ok(tokens >= 2 && tokens <= 10, `a handful of token requests over ~8 s of 3 s tokens, not one per query: ${tokens}`);
      const status = await g.admin('/status');
      const metrics = await g.admin('/metrics');
      const [auth] = status.json().backend.auth;
      assert.equal(auth.state, 'valid');
      assert.equal(auth.clientId, 'ged145');
      for (const [where, text] of [['/status', status.text], ['/metrics', metrics.text], ['the log', g.gw.out + g.gw.err]]) {
        assert.ok(!text.includes(CLIENT_SECRET), `the client secret is not in ${where}`);
      }
      assert.match(metrics.text, /ged145_backend_token_requests_total\{result="ok"\} [1-9]/);
    } finally {
      client.close();
      await g.stop();
    }
  });

  it('without the CA configured nothing is answered through: the token request fails verification, and /ready, /status and the log say why', async () => {
    const g = await startGateway(configWith({ tls: { ca: null } }), { dir, env: { CREDENTIALS_DIRECTORY: dir } });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const records = await burst(client, { first: 10, n: 50, clidOf });
      assert.equal(records.filter((r) => r.reply.type === 'QUERY_RESP').length, 0, 'verification is on');
      assert.ok(records.every((r) => r.reply.status === STATUS.E_AG_HOST_ERROR1));
      const { backend } = (await g.admin('/status')).json();
      // The token endpoint is behind the same TLS: no token, so no query reaches the API.
      assert.match(backend.auth[0].lastError, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN/);
      assert.equal(backend.origins[nginx.url].byReason.auth_failed, 50);
      assert.match(g.gw.err, /backend token request failed: no answer: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)/);
      const ready = await g.admin('/ready');
      assert.equal(ready.status, 503);
      assert.match(ready.json().reason, /^backend auth: no answer: /);
      assert.match((await g.admin('/metrics')).text, /ged145_backend_failures_total\{reason="auth_failed"\} [1-9]/);
    } finally {
      client.close();
      await g.stop();
    }
  });

  it('a handshake the backend itself fails (no CA for its name) is tls_error with the certificate problem in words', async () => {
    // A bearer token: no token endpoint in the way, so the API's own handshake is what fails.
    const g = await startGateway({
      backend: { auth: { type: 'bearer', token: 'x' } }, routes: { cust: custRoute(nginx.url) },
    }, { dir });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const records = await burst(client, { first: 10, n: 40, clidOf });
      assert.ok(records.every((r) => r.reply.status === STATUS.E_AG_HOST_ERROR1));
      const { backend } = (await g.admin('/status')).json();
      assert.match(backend.origins[nginx.url].lastError, /^tls_error: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN): /);
      assert.equal(backend.origins[nginx.url].byReason.tls_error, 40);
      const lines = g.gw.err.split('\n').filter((l) => l.includes('TLS handshake with'));
      assert.equal(lines.length, 1, 'one warning for the burst, not one per query');
      assert.match(lines[0], /check backend\.tls/);
      assert.match((await g.admin('/metrics')).text, /ged145_backend_failures_total\{reason="tls_error"\} 40/);
    } finally {
      client.close();
      await g.stop();
    }
  });

  it('a certificate for another name (backend.tls.servername) is tls_error too; mutual TLS with backend.tls.cert and key is answered', async () => {
    const g = await startGateway({
      backend: { tls: { ca: certs.ca, servername: 'crm.other.example' }, auth: { type: 'bearer', token: 'x' } }, routes: { cust: custRoute(nginx.url) },
    }, { dir });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const records = await burst(client, { first: 10, n: 10, clidOf });
      assert.ok(records.every((r) => r.reply.status === STATUS.E_AG_HOST_ERROR1));
      assert.match((await g.admin('/status')).json().backend.origins[nginx.url].lastError, /^tls_error: ERR_TLS_CERT_ALTNAME_INVALID: /);
    } finally {
      client.close();
      await g.stop();
    }
    // An nginx that requires a client certificate signed by the test CA.
    const mtls = await startNginx({ upstreamPort: api.port, certs, clientCa: certs.ca });
    const m = await startGateway({
      backend: { tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey }, auth: oauth({ tokenUrl: `${mtls.url}/oauth/token` }) },
      routes: { cust: custRoute(mtls.url) },
    }, { dir, env: { CREDENTIALS_DIRECTORY: dir } });
    const c2 = await WireClient.connect(m.port);
    try {
      await c2.open();
      assertAnswered(await burst(c2, { first: 10, n: 50, clidOf }));
    } finally {
      c2.close();
      await m.stop();
      await mtls.close();
    }
  });

  it('through a forward proxy (backend.proxy, a real tinyproxy): answered, over CONNECT tunnels', async () => {
    const proxy = await startTinyproxy();
    const g = await startGateway(configWith({ proxy: proxy.url }), { dir, env: { CREDENTIALS_DIRECTORY: dir } });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const records = await burst(client, { first: 10, n: 200, clidOf });
      // 200 queries at once open new CONNECT tunnels and TLS sessions: on a 2-core machine shared with nginx and
      // tinyproxy a few sit near the deadline (4 % on the code before the structural split too), so 5 % may be cut.
      assertAnswered(records, { deadlineShare: 0.05 });
      assert.ok(proxy.connects() >= 2, `the token endpoint and the API were reached through the proxy (${proxy.connects()} tunnels)`);
    } finally {
      client.close();
      await g.stop();
      await proxy.close();
    }
  });

  it('HTTPS_PROXY from the environment is honoured, and NO_PROXY names the hosts reached directly', async () => {
    const proxy = await startTinyproxy();
    try {
      for (const [noProxy, through] of [['', true], ['127.0.0.1', false]]) {
        const g = await startGateway(configWith(), { dir, env: { CREDENTIALS_DIRECTORY: dir, HTTPS_PROXY: proxy.url, NO_PROXY: noProxy } });
        const client = await WireClient.connect(g.port);
        const tunnels = proxy.connects();
        try {
          await client.open();
          assertAnswered(await burst(client, { first: 10, n: 20, clidOf }));
          assert.equal(proxy.connects() > tunnels, through, `NO_PROXY=${noProxy}`);
        } finally {
          client.close();
          await g.stop();
        }
      }
    } finally {
      await proxy.close();
    }
  });

  it('an expired or revoked token is never an application error: a 401 fetches a new token and the query is answered', async () => {
    const g = await startGateway(configWith({ auth: oauth() }), { dir, env: { CREDENTIALS_DIRECTORY: dir } });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      assertAnswered(await burst(client, { first: 10, n: 50, clidOf }));
      api.revokeAll();
      const records = await burst(client, { first: 100, n: 100, clidOf });
      assertAnswered(records);
      assert.match((await g.admin('/metrics')).text, /ged145_backend_auth_retries_total [1-9]/);
    } finally {
      client.close();
      await g.stop();
    }
  });

  it('an API that answers 401 to every token: unauthorized for the router, one new token, not one per query', async () => {
    // The breaker off: with it, 401s count against the origin and its circuit stops the calls (and the token requests) by itself.
    const g = await startGateway({ ...configWith(), breaker: false }, { dir, env: { CREDENTIALS_DIRECTORY: dir } });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      assertAnswered(await burst(client, { first: 10, n: 20, clidOf }));
      const before = api.stats.tokenRequests;
      api.refuseTokens(true);
      // Three bursts: the second and third present the token fetched after the first 401.
      const records = [];
      for (let i = 0; i < 3; i++) records.push(...await burst(client, { first: 100 + i * 100, n: 70, clidOf }));
      assert.ok(records.every((r) => r.reply.type === 'FAILURE_CONF' && r.reply.status === STATUS.E_AG_HOST_ERROR1), 'never an unknown caller');
      assert.ok(api.stats.tokenRequests - before <= 2, `token requests: ${api.stats.tokenRequests - before}`);
      const { backend } = (await g.admin('/status')).json();
      assert.equal(backend.origins[nginx.url].byReason.unauthorized, 210, JSON.stringify(backend.origins));
      assert.match(g.gw.err, /refused the gateway's credentials \(HTTP 401\); check backend\.auth/);
    } finally {
      api.refuseTokens(false);
      client.close();
      await g.stop();
    }
  });

  it('a token endpoint that refuses the client: the start goes on, /ready says why, queries get a host error (auth_failed)', async () => {
    api.refuseClient(true);
    const g = await startGateway(configWith(), { dir, env: { CREDENTIALS_DIRECTORY: dir } });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const records = await burst(client, { first: 10, n: 30, clidOf });
      assert.ok(records.every((r) => r.reply.type === 'FAILURE_CONF' && r.reply.status === STATUS.E_AG_HOST_ERROR1));
      const ready = await g.admin('/ready');
      assert.equal(ready.status, 503);
      assert.match(ready.json().reason, /the token endpoint answered HTTP 401: invalid_client/);
      const { backend } = (await g.admin('/status')).json();
      assert.equal(backend.auth[0].state, 'failing');
      assert.equal(backend.origins[nginx.url].byReason.auth_failed, 30);
      assert.equal((backend.circuits[nginx.url] || { state: 'closed' }).state, 'closed', 'not the API\'s failure');
      assert.match(g.gw.err, /backend token request failed: the token endpoint answered HTTP 401: invalid_client/);
      api.refuseClient(false);
      // Asked again 1, 2, 4, 8 s after the failures before, by the retry timer (not by the queries):
      // /ready turns 200 at the first retry after the endpoint takes the client again.
      const until = Date.now() + 10_000;
      while ((await g.admin('/ready')).status !== 200 && Date.now() < until) await wait(100);
      assert.equal((await g.admin('/ready')).status, 200);
      assertAnswered(await burst(client, { first: 100, n: 20, clidOf }));
    } finally {
      api.refuseClient(false);
      client.close();
      await g.stop();
    }
  });

  it('a handler module with ctx.request keeps TLS, auth, metrics and the status page; an edited handler answers after SIGHUP with no query lost', async () => {
    const handler = path.join(dir, 'cust-handler.js');
    const write = (label) => fs.writeFileSync(handler, `'use strict';
module.exports = async (query, ctx) => {
  const res = await ctx.request('${nginx.url}/customers?phone=' + encodeURIComponent(query.clid));
  if (res.status === 404) throw Object.assign(new Error('unknown caller'), { appError: true });
  const { customer } = res.json();
  return { vars: { 1: customer.tier, 2: customer.agentGroup, 3: '${label}' }, ecc: { 'user.balance': customer.balance } };
};
`);
    write('v1');
    const route = { module: handler, timeoutMs: 200, backendCredentials: true };
    const g = await startGateway({ backend: { tls: { ca: certs.ca }, auth: oauth() }, routes: { cust: route } }, {
      dir, env: { CREDENTIALS_DIRECTORY: dir },
    });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const first = await burst(client, { first: 10, n: 40, clidOf });
      assertAnswered(first);
      assert.ok(first.filter((r) => r.reply.type === 'QUERY_RESP').every((r) => r.reply.vars[3] === 'v1'));
      const metrics = (await g.admin('/metrics')).text;
      assert.match(metrics, /ged145_backend_responses_total\{class="2xx"\} ([3-9]\d|\d{3,})/, 'the handler\'s calls are counted');
      assert.equal((await g.admin('/status')).json().backend.origins[nginx.url].requests >= 40, true);
      // Queries go on while the handler changes and the gateway reloads.
      write('v2');
      let id = 1000;
      const sent = [];
      const pump = setInterval(() => { for (let i = 0; i < 5; i++) { sent.push(id); client.query(id, { subtype: 'cust', clid: clidOf(id) }); id++; } }, 10);
      await wait(200);
      g.gw.kill('SIGHUP');
      await g.gw.waitFor(/configuration reloaded \(handler modules loaded afresh: cust\)/);
      await wait(300);
      clearInterval(pump);
      await client.waitForCount(1 + first.length + sent.length, 5000);
      assert.deepEqual(exactlyOnce(client.messages.slice(1), [...first.map((r) => r.id), ...sent]), { missing: [], duplicated: [] });
      const after = await burst(client, { first: 5000, n: 20, clidOf });
      assertAnswered(after);
      assert.ok(after.filter((r) => r.reply.type === 'QUERY_RESP').every((r) => r.reply.vars[3] === 'v2'), 'the edited handler answers');
    } finally {
      client.close();
      await g.stop();
    }
  });
});
