'use strict';

// An API that says "slow down" or goes into maintenance, at full length, against a gateway
// process (bin/ged145.js) with the default configuration but for its routes:
// - 200 queries/s for 10 s against a real nginx limit_req of 100 requests/s answering
//   `429 Retry-After: 1`: no known caller gets E_AG_HOST_ERROR2, at most 10 % of the queries meet a 429;
// - a 5 s `503 Retry-After: 5` window at 100 queries/s: at most 20 requests reach the API in it.
// The figures go to the stress run's reliability figures (tests/reliability/record.js).

const assert = require('node:assert/strict');
const { STATUS } = require('../../lib/protocol');
const { WireClient } = require('../helpers/wire');
const { tmpDir } = require('../helpers/tmp');
const {
  startGateway, rateRun, realPartsMissing, KNOWN,
} = require('../helpers/real-backend');
const { startLimitedApi, startLimitingNginx } = require('../helpers/limited-api');
const { record } = require('../reliability/record');

const clidOf = (id) => (id % 5 === 0 ? `5559${String(id).padStart(6, '0')}` : `555100${String(id % 10_000).padStart(4, '0')}`);

function tally(records) {
  const t = {
    queries: records.length, answered: 0, unknown: 0, knownAppErrors: 0, hostErrors: 0, late: 0,
  };
  for (const { clid, reply, latencyMs } of records) {
    if (latencyMs >= 300) t.late++;
    if (reply.type === 'QUERY_RESP') t.answered++;
    else if (reply.status === STATUS.E_AG_HOST_ERROR2) {
      if (KNOWN.test(clid)) t.knownAppErrors++;
      else t.unknown++;
    } else t.hostErrors++;
  }
  return t;
}

describe('stress: an API that rate-limits and goes into maintenance', function () {
  this.timeout(120_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function gateway(config) {
    const g = await startGateway(config, { dir: tmpDir('ged145-ratelimit-') });
    cleanup.push(() => g.stop());
    const c = await WireClient.connect(g.port);
    cleanup.push(() => c.close());
    await c.open();
    return { g, c };
  }

  it('200 queries/s for 10 s against nginx limit_req 100/s with 429 Retry-After: 1', async () => {
    const missing = realPartsMissing();
    if (missing !== null) throw new Error(`this test needs ${missing.join(', ')} (.ci/run installs them)`);
    const api = await startLimitedApi();
    cleanup.push(() => api.close());
    const nginx = await startLimitingNginx(api, { rate: 100 });
    cleanup.push(() => nginx.close());
    const { g, c } = await gateway({
      routes: { cust: { method: 'GET', url: `${nginx.url}/ra/c/{clid}`, response: { 'vars.1': 'customer.tier' } } },
    });
    const records = await rateRun(c, {
      first: 10, rate: 200, durationMs: 10_000, subtype: 'cust', clidOf,
    });
    const backend = (await g.admin('/status')).json().backend;
    const origin = backend.origins[nginx.url];
    const t = {
      ...tally(records), met429: origin.byReason.rate_limited || 0, reachedApi: api.stats.requests, pacing: backend.pacing[nginx.url],
    };
    record('rate limit: 200 queries/s against 100/s, 429 Retry-After: 1, 10 s', t);
    assert.equal(t.knownAppErrors, 0, JSON.stringify(t));
    assert.ok(t.met429 <= t.queries * 0.1, JSON.stringify(t));
    assert.equal(t.late, 0, JSON.stringify(t));
  });

  it('a 5 s window of 503 Retry-After: 5 at 100 queries/s', async () => {
    const api = await startLimitedApi();
    cleanup.push(() => api.close());
    const { c } = await gateway({
      routes: { cust: { method: 'GET', url: `${api.url}/c/{clid}`, response: { 'vars.1': 'customer.tier' } } },
    });
    let windowStart = 0;
    const start = setTimeout(() => {
      windowStart = Date.now();
      api.maintenance(5000, 5);
    }, 2500);
    cleanup.push(() => clearTimeout(start));
    const records = await rateRun(c, {
      first: 10, rate: 100, durationMs: 10_000, subtype: 'cust', clidOf,
    });
    const inWindow = api.stats.times.filter((at) => at >= windowStart && at < windowStart + 5000).length;
    const t = {
      ...tally(records), inWindow, reachedApi: api.stats.requests, answered503: api.stats.inMaintenance,
    };
    record('maintenance: 503 Retry-After: 5 for 5 s at 100 queries/s', t);
    assert.ok(inWindow <= 20, JSON.stringify(t));
    assert.equal(t.knownAppErrors, 0, JSON.stringify(t));
    assert.equal(t.late, 0, JSON.stringify(t));
  });
});
