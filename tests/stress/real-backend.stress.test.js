'use strict';

// The real-backend scenario at full length: 2,000+ queries for `cust`
// through a real nginx (TLS from a private CA, keep-alive 2 s / 100 requests), OAuth2 tokens
// expiring every 5 s, rate runs and bursts of 200-300 in one write separated by 1.9-2.6 s of
// silence; the same through a real tinyproxy; and the keep-alive race at its worst, an nginx that
// closes idle connections after 500 ms, met by bursts every 450-550 ms.

const assert = require('node:assert/strict');
const { STATUS } = require('../../lib/protocol');
const { WireClient, exactlyOnce } = require('../helpers/wire');
const { startRestSim } = require('../../rest-sim/server');
const { prng: createPrng } = require('../../lib/prng');
const {
  startRealApi, startNginx, startTinyproxy, startGateway, burst, rateRun, clidOf, KNOWN,
} = require('../helpers/real-backend');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** Outcome counts of records, and the ones that were wrong: late, or not what the caller should get. */
function tally(records) {
  const out = {
    answered: 0, unknown: 0, late: 0, atDeadline: 0, wrong: [],
  };
  for (const { clid, reply, latencyMs } of records) {
    if (latencyMs >= 300) out.late++;
    if (KNOWN.test(clid) && reply.type === 'QUERY_RESP' && reply.vars[2] === `ag-${clid.slice(-2)}` && reply.ecc['user.balance'] === '12.5') out.answered++;
    else if (reply.type === 'FAILURE_CONF' && reply.status === STATUS.E_AG_HOST_ERROR1 && /did not answer within/.test(reply.error)) out.atDeadline++;
    else if (!KNOWN.test(clid) && reply.type === 'FAILURE_CONF' && reply.status === STATUS.E_AG_HOST_ERROR2) out.unknown++;
    else out.wrong.push([clid, reply.type, reply.status]);
  }
  return out;
}

describe('stress: a real backend over time', function () {
  this.timeout(300_000);
  let real;
  let certs;
  let api;
  let nginx;
  let dir;
  before(async () => {
    real = await startRealApi({ tokenLifetimeS: 5 });
    ({
      certs, api, nginx, dir,
    } = real);
  });
  after(async () => {
    if (real) await real.close();
  });

  for (const via of ['direct', 'through tinyproxy']) {
    it(`2,000+ queries ${via}: rate runs and bursts after 1.9-2.6 s of silence, 5 s tokens; every caller answered, none late, none lost`, async () => {
      const proxy = via === 'direct' ? null : await startTinyproxy();
      const config = {
        backend: {
          tls: { ca: certs.ca },
          auth: { type: 'oauth2', tokenUrl: `${nginx.url}/oauth/token`, clientId: 'ged145', clientSecretFile: 'crm-client-secret' },
          proxy: proxy === null ? null : proxy.url,
          // After each idle gap a burst opens new connections at once. Through a proxy each is a
          // CONNECT too: tinyproxy opened 64 of them in 150 ms of the 250 ms deadline on an idle
          // machine, and on a busy one 57 and 79 of 2,365 queries met the deadline
          // (docs/configuration.md, Real backends). Direct, 64 RSA handshakes on nginx's one worker
          // missed it too on a slower 2-core machine, on the old code as well: 16 for both.
          connections: 16,
        },
        routes: {
          cust: {
            method: 'GET',
            url: `${nginx.url}/customers?phone={clid}`,
            backendCredentials: true, // no backend.url: the route asks for backend.auth
            response: { 'vars.1': 'customer.tier', 'vars.2': 'customer.agentGroup', 'ecc.user.balance': 'customer.balance' },
          },
        },
      };
      const before = { ...api.stats };
      const g = await startGateway(config, { dir, env: { CREDENTIALS_DIRECTORY: dir } });
      const client = await WireClient.connect(g.port);
      const random = createPrng(via.length);
      try {
        await client.open();
        const records = [];
        let next = 10;
        const add = (rs) => { records.push(...rs); next += rs.length; };
        add(await rateRun(client, { first: next, rate: 200, durationMs: 3000, clidOf }));
        for (let i = 0; i < 6; i++) {
          await wait(1900 + Math.floor(random() * 700));
          add(await burst(client, { first: next, n: 200 + Math.floor(random() * 101), clidOf }));
        }
        await wait(2000);
        add(await rateRun(client, { first: next, rate: 100, durationMs: 3000, clidOf }));
        const ids = records.map((r) => r.id);
        assert.ok(ids.length >= 2000, `${ids.length} queries`);
        assert.deepEqual(exactlyOnce(client.messages.slice(1), ids), { missing: [], duplicated: [] });
        const t = tally(records);
        const why = JSON.stringify((await g.admin('/status')).json().backend.origins);
        assert.deepEqual({ late: t.late, wrong: t.wrong.slice(0, 5) }, { late: 0, wrong: [] }, `${t.wrong.length} wrong; ${why}`);
        // The gateway's own deadline answer (known or unknown caller), in time, for at most 2 %: bursts after idle gaps reopen
        // TLS connections near the 250 ms deadline on a slow 2-core machine (they did on the old code too).
        assert.ok(t.atDeadline <= 0.02 * ids.length, `${t.atDeadline} of ${ids.length} answered at the deadline`);
        assert.equal(t.answered + t.unknown + t.atDeadline, ids.length);
        assert.equal(api.stats.expiredPresented - before.expiredPresented, 0, 'no expired token ever presented');
        const tokens = api.stats.tokenRequests - before.tokenRequests;
        assert.ok(tokens <= 12, `tokens fetched a handful of times (${tokens}), not per query`);
        if (proxy !== null) assert.ok(proxy.connects() > 0);
        // The figures for the closing note.
        const metrics = (await g.admin('/metrics')).text;
        const reconnects = /ged145_backend_reconnects_total (\d+)/.exec(metrics)[1];
        process.stdout.write(`      ${via}: ${ids.length} queries, ${t.answered} answered, ${t.unknown} unknown callers, `
          + `${tokens} token requests, ${reconnects} reconnects${proxy ? `, ${proxy.connects()} tunnels` : ''}\n`);
      } finally {
        client.close();
        await g.stop();
        if (proxy !== null) await proxy.close();
      }
    });
  }

  it('an nginx closing idle connections after 500 ms, bursts of 20 every 450-550 ms: 1,000 of 1,000 answered', async () => {
    const sim = await startRestSim({ port: 0 });
    const front = await startNginx({ upstreamPort: sim.port, keepaliveTimeout: '500ms', tls: false });
    const g = await startGateway({ backend: { url: front.url } }, { dir });
    const client = await WireClient.connect(g.port);
    const random = createPrng(7);
    try {
      await client.open();
      const records = [];
      for (let i = 0; i < 50; i++) {
        records.push(...await burst(client, {
          first: 10 + i * 20, n: 20, subtype: 'echo', clidOf: (id) => String(id),
        }));
        await wait(450 + Math.floor(random() * 101));
      }
      const inTime = (r) => r.reply.type === 'QUERY_RESP' && r.latencyMs < 300;
      const ok = records.filter(inTime).length;
      // Which ones, if any: late (ms) or a FAILURE_CONF (status, text); a CI run once got 999.
      const missed = records.filter((r) => !inTime(r)).map((r) => [r.id, Math.round(r.latencyMs), r.reply.type, r.reply.status, r.reply.error]);
      const metrics = (await g.admin('/metrics')).text;
      process.stdout.write(`      ${ok} of ${records.length} answered; reconnects ${/ged145_backend_reconnects_total (\d+)/.exec(metrics)[1]}\n`);
      assert.equal(ok, 1000, JSON.stringify(missed));
    } finally {
      client.close();
      await g.stop();
      await front.close();
      await sim.close();
    }
  });
});
