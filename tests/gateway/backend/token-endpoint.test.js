'use strict';

// An OAuth2 token endpoint that is in trouble or says odd things, met by a real gateway process:
// one that refuses the client under load (the failure schedule, 1, 2, 4 ... s, whatever the
// query rate), tokens of a year and of 10 ms (the refresh timer's ceiling and floor), and a real
// nginx that requires a client certificate and answers its own 400 page, whose words reach /ready.
// The token endpoint and the API are tests/helpers/real-backend.js's; counts are the endpoint's own.

const assert = require('node:assert/strict');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { makeCerts } = require('../../helpers/certs');
const { tmpDir } = require('../../helpers/tmp');
const {
  startCustomerApi, startNginx, startGateway, rateRun, clidOf, KNOWN, CLIENT_ID, CLIENT_SECRET,
} = require('../../helpers/real-backend');
const { errorText } = require('../../../gateway/backend/auth');

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
