'use strict';

// The token endpoint at full length (tests/gateway/backend/token-endpoint.test.js has the short runs): a
// real gateway process at 200 queries/s for 10 s against a token endpoint that refuses the client
// (HTTP 401 invalid_client), and for 5 s with tokens of a year. The token endpoint counts its own
// requests. Before the failure schedule held, the first run cost 1,995 token requests; before the
// refresh timer had a ceiling, the second 671-742 a second.

const assert = require('node:assert/strict');
const { STATUS } = require('../../lib/protocol');
const { WireClient } = require('../helpers/wire');
const { tmpDir } = require('../helpers/tmp');
const {
  startCustomerApi, startGateway, rateRun, clidOf, KNOWN, CLIENT_ID, CLIENT_SECRET,
} = require('../helpers/real-backend');

function configFor(base) {
  return {
    backend: {
      url: base,
      auth: {
        type: 'oauth2', tokenUrl: `${base}/oauth/token`, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, clientAuth: 'body',
      },
    },
    routes: { cust: { method: 'GET', url: `${base}/customers?phone={clid}`, response: { 'vars.2': 'customer.agentGroup' } } },
  };
}

describe('stress: a token endpoint in trouble, at 200 queries/s', function () {
  this.timeout(120_000);
  const dir = tmpDir('ged145-token-stress-');

  async function at200(apiOptions, durationMs, prepare = () => {}) {
    const api = await startCustomerApi(apiOptions);
    prepare(api);
    const g = await startGateway(configFor(`http://127.0.0.1:${api.port}`), { dir });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      const records = await rateRun(client, {
        first: 10, rate: 200, durationMs, clidOf,
      });
      return {
        api, records, ready: await g.admin('/ready'), log: g.gw.err,
      };
    } finally {
      client.close();
      await g.stop();
      await api.close();
    }
  }

  it('a token endpoint that refuses the client for 10 s: at most 15 token requests, every query E_AG_HOST_ERROR1, /ready names the error', async () => {
    const { api, records, ready } = await at200({}, 10_000, (a) => a.refuseClient(true));
    assert.equal(records.length, 2000);
    const hostError1 = records.filter((r) => r.reply.type === 'FAILURE_CONF' && r.reply.status === STATUS.E_AG_HOST_ERROR1).length;
    assert.equal(hostError1, 2000, 'no caller taken for unknown, none answered');
    // At 0, 1, 3, 7 s after the start (1, 2, 4 s apart), and 15 s: 4 or 5 in the run.
    assert.ok(api.stats.tokenRequests <= 15, `token requests in 10 s: ${api.stats.tokenRequests}`);
    assert.equal(ready.status, 503);
    assert.match(ready.json().reason, /the token endpoint answered HTTP 401: invalid_client \(client authentication failed\)/);
  });

  it('tokens of a year for 5 s: at most 2 token requests, no query without a token', async () => {
    const { api, records } = await at200({ tokenLifetimeS: 365 * 24 * 3600 }, 5000);
    // A query the machine's load made miss its deadline is counted apart: this counts outcomes, not time.
    const late = ({ reply }) => reply.type === 'FAILURE_CONF' && /did not answer within/.test(reply.error);
    const right = ({ clid, reply }) => (KNOWN.test(clid)
      ? reply.type === 'QUERY_RESP' && reply.vars[2] === `ag-${clid.slice(-2)}`
      : reply.status === STATUS.E_AG_HOST_ERROR2);
    assert.deepEqual(records.filter((r) => !right(r) && !late(r)).map((r) => [r.clid, r.reply.type, r.reply.status, r.reply.error]), []);
    assert.ok(records.filter(right).length > 0);
    assert.ok(api.stats.tokenRequests <= 2, `token requests in 5 s: ${api.stats.tokenRequests}`);
  });
});
