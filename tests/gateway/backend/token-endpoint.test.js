'use strict';

// An OAuth2 token endpoint that is in trouble or says odd things, met by a real gateway process:
// one that refuses the client under load (the failure schedule, 1, 2, 4 ... s, whatever the
// query rate), tokens of a year and of 10 ms (the refresh timer's ceiling and floor), and a real
// nginx that requires a client certificate and answers its own 400 page, whose words reach /ready.
// The token endpoint and the API are tests/helpers/real-backend.js's; counts are the endpoint's own.

const assert = require('node:assert/strict');
const http = require('node:http');
const { once } = require('node:events');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { makeCerts } = require('../../helpers/certs');
const { tmpDir } = require('../../helpers/tmp');
const {
  startCustomerApi, startNginx, startGateway, rateRun, clidOf, KNOWN, CLIENT_ID, CLIENT_SECRET,
} = require('../../helpers/real-backend');
const { errorText, notB64token } = require('../../../gateway/backend/token-text');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** backend.url is the API itself: the route is on its origin, so backend.auth goes with it. */
function configFor(base, { tokenUrl = `${base}/oauth/token`, tls = {} } = {}) {
  return {
    backend: {
      url: base,
      tls,
      auth: {
        type: 'oauth2', tokenUrl, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, clientAuth: 'body',
      },
    },
    routes: {
      cust: {
        method: 'GET', url: `${base}/customers?phone={clid}`, response: { 'vars.1': 'customer.tier', 'vars.2': 'customer.agentGroup' },
      },
    },
  };
}

/**
 * Counts: known callers answered with their tags, unknown ones E_AG_HOST_ERROR2, known ones taken
 * for unknown (never), E_AG_HOST_ERROR1 for want of a token (hostError1) and for a deadline the
 * machine's load made the query miss (late: the tests count outcomes, not time).
 */
function tally(records) {
  const out = {
    answered: 0, unknown: 0, hostError1: 0, late: 0, knownAsUnknown: 0, other: 0,
  };
  for (const { clid, reply } of records) {
    if (reply.type === 'QUERY_RESP' && KNOWN.test(clid) && reply.vars[2] === `ag-${clid.slice(-2)}`) out.answered++;
    else if (reply.type === 'FAILURE_CONF' && reply.status === STATUS.E_AG_HOST_ERROR2) out[KNOWN.test(clid) ? 'knownAsUnknown' : 'unknown']++;
    else if (reply.type === 'FAILURE_CONF' && reply.status === STATUS.E_AG_HOST_ERROR1) out[/did not answer within/.test(reply.error) ? 'late' : 'hostError1']++;
    else out.other++;
  }
  return out;
}

describe('a token endpoint in trouble: the failure schedule, the refresh timer, its words in /ready', function () {
  this.timeout(60_000);
  const dir = tmpDir('ged145-token-');

  /** A gateway against an API started with apiOptions; run(api, g, client) does the rest. */
  async function withGateway(apiOptions, run, configure = (base) => configFor(base)) {
    const api = await startCustomerApi(apiOptions);
    const base = `http://127.0.0.1:${api.port}`;
    let g = null;
    let client = null;
    try {
      if (apiOptions.refuse) api.refuseClient(true);
      g = await startGateway(configure(base), { dir });
      client = await WireClient.connect(g.port);
      await client.open();
      await run(api, g, client);
    } finally {
      if (client) client.close();
      if (g) await g.stop();
      await api.close();
    }
  }

  it('refuses the client under 200 queries/s for 3 s: 3 token requests (at 0, 1 and 3 s), not one per query; every query a host error at once', async () => {
    await withGateway({ refuse: true }, async (api, g, client) => {
      const records = await rateRun(client, {
        first: 10, rate: 200, durationMs: 3000, clidOf,
      });
      const t = tally(records);
      assert.deepEqual({ ...t, hostError1: t.hostError1 + t.late, late: 0 }, {
        answered: 0, unknown: 0, hostError1: 600, late: 0, knownAsUnknown: 0, other: 0,
      }, 'no caller is taken for unknown, none answered');
      // Start, then 1 s and 2 s after the failures before: 3, one more if the run ends late.
      assert.ok(api.stats.tokenRequests <= 4, `token requests: ${api.stats.tokenRequests} (one per query before)`);
      const ready = await g.admin('/ready');
      assert.equal(ready.status, 503);
      assert.match(ready.json().reason, /^backend auth: the token endpoint answered HTTP 401: invalid_client \(client authentication failed\)$/);
      const warned = g.gw.err.split('\n').filter((l) => l.includes('backend token request failed'));
      assert.equal(warned.length, 1, 'one warning line, the first failure');
      assert.match(warned[0], /invalid_client \(client authentication failed\)/);
      const [auth] = (await g.admin('/status')).json().backend.auth;
      assert.equal(auth.state, 'failing');
      assert.equal(auth.tokenRequests, api.stats.tokenRequests);
    });
  });

  it('answers again once the endpoint takes the client: the retry timer asks it, no query has to', async () => {
    await withGateway({ refuse: true }, async (api, g, client) => {
      await g.gw.waitFor(/backend token request failed/);
      api.refuseClient(false);
      await wait(1500); // the retry 1 s after the first failure
      const records = await rateRun(client, {
        first: 10, rate: 100, durationMs: 500, clidOf,
      });
      const t = tally(records);
      assert.equal(t.answered + t.unknown + t.late, 50, JSON.stringify(t));
      assert.ok(t.answered > 0, JSON.stringify(t));
      assert.equal(api.stats.tokenRequests, 2);
      assert.equal((await g.admin('/ready')).status, 200);
      assert.match(g.gw.out + g.gw.err, /backend token endpoint answers again/);
    });
  });

  it('a token of a year (expires_in 31536000): 1 token request in 250 queries over 2 s, and a refresh planned within a day', async () => {
    // 5 s of it: tests/stress/token-endpoint.stress.test.js.
    await withGateway({ tokenLifetimeS: 365 * 24 * 3600 }, async (api, g, client) => {
      const records = await rateRun(client, {
        first: 10, rate: 125, durationMs: 2000, clidOf,
      });
      const t = tally(records);
      assert.equal(t.answered + t.unknown + t.late, 250, JSON.stringify(t));
      assert.ok(t.answered > 0, JSON.stringify(t));
      assert.ok(api.stats.tokenRequests <= 2, `token requests in 2 s: ${api.stats.tokenRequests} (hundreds a second before)`);
      const [auth] = (await g.admin('/status')).json().backend.auth;
      assert.equal(auth.state, 'valid');
      assert.ok(Date.parse(auth.expiresAt) - Date.now() > 364 * 24 * 3600 * 1000, auth.expiresAt);
    });
  });

  it('a token of 10 ms (expires_in 0.01): at most one token request a second, a warning that says so, no caller taken for unknown', async () => {
    await withGateway({ tokenLifetimeS: 0.01 }, async (api, g, client) => {
      const records = await rateRun(client, {
        first: 10, rate: 100, durationMs: 3000, clidOf,
      });
      const t = tally(records);
      assert.equal(t.knownAsUnknown, 0, JSON.stringify(t));
      assert.equal(t.other, 0, JSON.stringify(t));
      assert.ok(api.stats.tokenRequests <= 5, `token requests in about 3 s: ${api.stats.tokenRequests} (139 a second before)`);
      assert.match(g.gw.err, /the token endpoint's tokens live 0\.01 s \(expires_in\): a token is fetched at most once a second/);
    });
  });

  describe('behind nginx that requires a client certificate', () => {
    let certs;
    let other;
    let api;
    let nginx;
    before(async () => {
      certs = makeCerts();
      other = makeCerts(); // another CA: its client certificate is not trusted
      api = await startCustomerApi();
      nginx = await startNginx({ upstreamPort: api.port, certs, clientCa: certs.ca });
    });
    after(async () => {
      if (nginx) await nginx.close();
      if (api) await api.close();
      if (certs) certs.cleanup();
      if (other) other.cleanup();
    });

    const cases = [
      ['no client certificate', () => ({ ca: certs.ca }), '400 No required SSL certificate was sent'],
      ['a client certificate of another CA', () => ({ ca: certs.ca, cert: other.clientCert, key: other.clientKey }), '400 The SSL certificate error'],
    ];
    for (const [what, tls, page] of cases) {
      it(`${what}: nginx's own 400 page names the cause, in /ready, /status and the log`, async () => {
        const g = await startGateway(configFor(nginx.url, { tls: tls() }), { dir });
        try {
          await g.gw.waitFor(/backend token request failed/);
          const ready = await g.admin('/ready');
          assert.equal(ready.status, 503);
          assert.equal(ready.json().reason, `backend auth: the token endpoint answered HTTP 400: ${page}`);
          assert.equal((await g.admin('/status')).json().backend.auth[0].lastError, `the token endpoint answered HTTP 400: ${page}`);
          assert.ok(g.gw.err.includes(`the token endpoint answered HTTP 400: ${page};`), g.gw.err);
        } finally {
          await g.stop();
        }
      });
    }

    it('with the client certificate of the CA nginx trusts: a token, /ready 200', async () => {
      const g = await startGateway(configFor(nginx.url, { tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey } }), { dir });
      try {
        const until = Date.now() + 5000;
        while ((await g.admin('/ready')).status !== 200 && Date.now() < until) await wait(50);
        assert.equal((await g.admin('/ready')).status, 200);
        assert.equal(api.stats.tokenRequests > 0, true);
      } finally {
        await g.stop();
      }
    });
  });
});

/**
 * A token endpoint (its own server, so its origin is not the API's) that answers 200 with
 * access_token, and the customers API, each counting its requests.
 */
async function startTokenAndApi(accessToken) {
  const counts = { tokenRequests: 0, lookups: 0 };
  const json = (res, status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const token = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      counts.tokenRequests++;
      json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3600 });
    });
  });
  const api = http.createServer((req, res) => {
    counts.lookups++;
    req.resume();
    json(res, 200, { customer: { tier: 'gold', agentGroup: 'ag-api' } });
  });
  const listen = async (server) => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `http://127.0.0.1:${server.address().port}`;
  };
  return {
    counts,
    tokenBase: await listen(token),
    apiBase: await listen(api),
    close: () => Promise.all([token, api].map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r); }))),
  };
}

describe('an access_token that is not RFC 6750 token text: a token failure, the same on both engines', function () {
  this.timeout(60_000);
  const dir = tmpDir('ged145-token-text-');

  // The undici engine refused such a token on every request (UND_ERR_INVALID_ARG, blamed on the
  // API's origin, /ready 200, the token kept for its lifetime); the axios engine sent it on.
  const cases = [
    { what: 'a control character (U+0001)', token: 'abc\u0001def', fault: 'U+0001 at character 4 of 7', fallback: null },
    {
      what: 'a character past U+00FF (\u20ac), with a fallback answer',
      token: 'abc\u20acdef',
      fault: 'U+20AC at character 4 of 7',
      fallback: { vars: { 2: 'default-route' } },
    },
  ];

  /** One gateway with engine against a token endpoint that hands out token; what it did. */
  async function run(engine, { token, fallback }) {
    const parts = await startTokenAndApi(token);
    const tokenUrl = `${parts.tokenBase}/oauth/token`;
    const config = {
      backend: {
        url: parts.apiBase,
        engine,
        auth: {
          type: 'oauth2', tokenUrl, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, clientAuth: 'body',
        },
      },
      fallback,
      routes: {
        cust: {
          method: 'GET', url: `${parts.apiBase}/customers?phone={clid}`, response: { 'vars.1': 'customer.tier', 'vars.2': 'customer.agentGroup' },
        },
      },
    };
    let g = null;
    let client = null;
    try {
      g = await startGateway(config, { dir });
      await g.gw.waitFor(/backend token request failed/);
      client = await WireClient.connect(g.port);
      await client.open();
      const before = client.messages.length;
      for (let id = 1; id <= 20; id++) client.query(id, { subtype: 'cust', clid: clidOf(id) });
      await client.waitForCount(before + 20, 10_000);
      await wait(200); // a second reply to any of them would be here by now
      const replies = client.messages.slice(before);
      const ready = await g.admin('/ready');
      const status = (await g.admin('/status')).json();
      const health = (await g.admin('/health')).json();
      return {
        tokenUrl,
        apiBase: parts.apiBase,
        replies,
        ready: { status: ready.status, reason: ready.json().reason },
        auth: status.backend.auth[0],
        health,
        warned: g.gw.err.split('\n').filter((l) => l.includes('backend token request failed')),
        log: g.gw.out + g.gw.err,
        counts: { ...parts.counts },
      };
    } finally {
      if (client) client.close();
      if (g) await g.stop();
      await parts.close();
    }
  }

  /** A reply as the router sees it, without its invokeId. */
  const seen = (m) => (m.type === 'QUERY_RESP' ? { type: m.type, vars: m.vars } : { type: m.type, status: m.status, error: m.error });

  for (const c of cases) {
    it(`${c.what}: the token endpoint is named in /ready, /status and one log line, backed off, the API never asked, both engines alike`, async () => {
      const seenBy = {};
      for (const engine of ['undici', 'axios']) {
        const r = await run(engine, c);
        const problem = `the token endpoint's access_token is not a bearer token (RFC 6750 b64token): ${c.fault}`;
        assert.deepEqual(r.ready, { status: 503, reason: `backend auth: ${problem}` }, engine);
        assert.equal(r.auth.tokenUrl, r.tokenUrl, engine);
        assert.equal(r.auth.state, 'failing', engine);
        assert.equal(r.auth.lastError, problem, engine);
        assert.equal(r.warned.length, 1, `${engine}: one warning line, the first failure`);
        assert.ok(r.warned[0].includes(problem) && r.warned[0].includes(r.tokenUrl), `${engine}: ${r.warned[0]}`);
        assert.ok(!r.log.includes(c.token), `${engine}: the token itself is never logged`);
        assert.equal(r.counts.lookups, 0, `${engine}: the API is never asked with a token it cannot have`);
        // At start, then 1 s and 2 s after the failures before: no request per query.
        assert.ok(r.counts.tokenRequests >= 1 && r.counts.tokenRequests <= 3, `${engine}: token requests: ${r.counts.tokenRequests}`);
        assert.equal(r.auth.tokenRequests, r.counts.tokenRequests, engine);
        // No query judged the API (none reached it): idle, its last state untouched by the token's failure.
        const { state, lastState, consecutiveFailures } = r.health.backend;
        assert.deepEqual([state, lastState, consecutiveFailures], ['idle', 'reachable', 0],
          `${engine}: the API is not blamed: ${JSON.stringify(r.health.backend)}`);
        assert.ok(!/backend failing/.test(r.log), `${engine}: no line blames the API's origin`);
        // Every query answered once, with what the config gives for a backend that cannot be asked.
        assert.deepEqual(r.replies.map((m) => m.invokeId).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1), engine);
        const expected = c.fallback === null
          ? (m) => m.type === 'FAILURE_CONF' && m.status === STATUS.E_AG_HOST_ERROR1
          : (m) => m.type === 'QUERY_RESP' && m.vars[2] === 'default-route';
        assert.deepEqual(r.replies.filter((m) => !expected(m)).map(seen), [], engine);
        seenBy[engine] = r.replies.map(seen);
      }
      assert.deepEqual(seenBy.axios, seenBy.undici, 'both engines give the router the same answers');
    });
  }
});

describe('the token endpoint\'s error text (errorText)', () => {
  it('OAuth2 error and error_description, on one line', () => {
    assert.equal(errorText({ error: 'invalid_client', error_description: 'wants\r\nBasic' }, ''), ': invalid_client (wants Basic)');
  });

  it("a proxy's page: its title, else its text without tags; printable, at most 200 characters", () => {
    const page = '<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body><h1>429</h1></body></html>';
    assert.equal(errorText(null, page), ': 429 Too Many Requests');
    const noTitle = '<html><body><h1>502 Bad Gateway</h1>\n<p>upstream \u00e9t\u00e9 down</p></body></html>';
    assert.equal(errorText(null, noTitle), ': 502 Bad Gateway upstream ?t? down');
    const long = errorText(null, 'x'.repeat(5000));
    assert.equal(long.length, 2 + 200);
    assert.ok(long.endsWith('...'));
  });

  it('nothing to say: nothing added', () => {
    assert.equal(errorText(null, ''), '');
    assert.equal(errorText(null, '  \n'), '');
    assert.equal(errorText(null, '<html></html>'), '');
  });
});

describe('a bearer token\'s text (notB64token, RFC 6750 section 2.1)', () => {
  it('takes b64token: letters, digits, - . _ ~ + / and "=" padding at the end', () => {
    for (const t of ['a', 'eyJhbGciOi.eyJzdWIi.SflKxwRJ', 'A-Z_a.z~0+9/', 'abc=', 'abc==']) assert.equal(notB64token(t), null, t);
  });

  it('names the first character out of place, by code point, never the token', () => {
    assert.equal(notB64token('abc\u0001def'), 'U+0001 at character 4 of 7');
    assert.equal(notB64token('abc\u20acdef'), 'U+20AC at character 4 of 7');
    assert.equal(notB64token('ab cd'), 'U+0020 at character 3 of 5');
    assert.equal(notB64token('abc\u00e9'), 'U+00E9 at character 4 of 4');
    assert.equal(notB64token('tok\ud83d\ude00'), 'U+1F600 at character 4 of 5');
    assert.equal(notB64token('=abc'), 'U+003D at character 1 of 4', 'padding alone is no token');
    assert.equal(notB64token('ab=c'), 'U+0063 at character 4 of 4', 'nothing after the padding');
    assert.equal(notB64token('abc==\t'), 'U+0009 at character 6 of 6');
  });
});
