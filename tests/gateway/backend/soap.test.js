'use strict';

// A SOAP CRM (tests/helpers/soap-crm.js: text/xml envelopes, faults as HTTP 500) mapped to VAR and
// ECC tags by configuration alone: docs/examples/soap-crm.json, run by a real gateway process,
// asked by a GED-145 client over loopback. Counted by outcome: known callers answered, "not found"
// faults as E_AG_HOST_ERROR2 (app_error), the CRM's own failures, a proxy's HTML page and an entity
// bomb as E_AG_HOST_ERROR1, never as "unknown caller".

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { STATUS } = require('../../../lib/protocol');
const { WireClient, exactlyOnce } = require('../../helpers/wire');
const { tmpDir } = require('../../helpers/tmp');
const { startGateway } = require('../../helpers/real-backend');
const { startSoapCrm, elementText, ACTION } = require('../../helpers/soap-crm');

const EXAMPLE = path.join(__dirname, '..', '..', '..', 'docs', 'examples', 'soap-crm.json');

describe('a SOAP CRM by configuration alone (docs/examples/soap-crm.json)', function () {
  this.timeout(30_000);
  let crm;
  let gw;
  let client;
  let invokeId = 1;

  before(async () => {
    crm = await startSoapCrm();
    const config = JSON.parse(fs.readFileSync(EXAMPLE, 'utf8'));
    const route = config.routes['crm.customer'];
    route.url = route.url.replace(/^http:\/\/[^/]+/, crm.url);
    // What is tested is what each answer means, not its speed on a shared test machine.
    Object.assign(config, { deadlineMs: 3000, routerRequestTimeoutMs: 600_000 });
    delete route.timeoutMs;
    gw = await startGateway(config, { dir: tmpDir('ged145-soap-') });
    client = await WireClient.connect(gw.port);
    await client.open();
  });
  after(async () => {
    if (client) client.close();
    if (gw) await gw.stop();
    if (crm) await crm.close();
  });

  const ask = async (fields) => {
    const id = ++invokeId;
    client.query(id, { subtype: 'crm.customer', ...fields });
    return client.waitFor((m) => m.invokeId === id, 5000);
  };

  it('a known caller: the envelope is posted with its SOAPAction, the answer mapped to VARs and ECC', async () => {
    const r = await ask({ clid: '5551000001', dn: '8005551234' });
    assert.equal(r.type, 'QUERY_RESP', JSON.stringify(r));
    assert.equal(r.status, 0);
    assert.deepEqual(r.vars, { 1: 'C-1001', 2: 'Gold', 3: '1250.50' });
    assert.deepEqual(r.ecc, { 'user.name': 'Jose Muller', 'user.city': 'Zurich' }); // notes is xsi:nil: no tag
    const req = crm.requests.at(-1);
    assert.equal(req.method, 'POST');
    assert.equal(req.headers['content-type'], 'text/xml; charset=utf-8');
    assert.equal(req.headers.soapaction, ACTION);
    assert.match(req.headers.accept, /text\/xml/);
    assert.equal(elementText(req.body, 'phone'), '5551000001');
    assert.equal(elementText(req.body, 'dialed'), '8005551234');
  });

  it('markup in the answer is decoded; markup in the query is escaped, never spliced into the envelope', async () => {
    const r = await ask({ clid: '5551000003', dn: '</crm:dialed><crm:phone>5551000001</crm:phone>&amp;"\'' });
    assert.equal(r.status, 0, JSON.stringify(r));
    assert.equal(r.ecc['user.name'], 'Dana <Smith> & Sons');
    const req = crm.requests.at(-1);
    assert.equal(elementText(req.body, 'phone'), '5551000003');
    assert.equal(elementText(req.body, 'dialed'), '</crm:dialed><crm:phone>5551000001</crm:phone>&amp;"\'');
  });

  it('a "not found" fault (HTTP 500, soap:Client) is app_error: E_AG_HOST_ERROR2 with the faultstring', async () => {
    const r = await ask({ clid: '5559999999' });
    assert.equal(r.type, 'FAILURE_CONF');
    assert.equal(r.status, STATUS.E_AG_HOST_ERROR2);
    assert.equal(r.error, 'Customer 5559999999 not found');
  });

  it('the CRM\'s own fault (soap:Server), a proxy\'s HTML 500 and an entity bomb are host errors: E_AG_HOST_ERROR1', async () => {
    for (const clid of ['5550000999', '5550000502', '5550000666']) {
      const r = await ask({ clid });
      assert.equal(r.type, 'FAILURE_CONF', clid);
      assert.equal(r.status, STATUS.E_AG_HOST_ERROR1, `${clid}: ${JSON.stringify(r)}`);
    }
    const status = await (await gw.admin('/status')).json();
    const origin = JSON.stringify(status);
    assert.match(origin, /bad_xml/, 'the bomb is counted as a bad XML answer');
    assert.match(origin, /http_500/);
  });

  it('counted over a burst: every known caller answered, every unknown one app_error, every CRM failure host_error, each exactly once', async () => {
    const first = invokeId + 1;
    const plan = [];
    for (let i = 0; i < 60; i++) {
      const kind = ['known', 'unknown', 'failing'][i % 3];
      const clid = { known: `555100000${1 + (i % 3)}`, unknown: `55520${String(i).padStart(5, '0')}`, failing: '5550000999' }[kind];
      plan.push({ id: ++invokeId, kind, clid });
    }
    const before = client.messages.length;
    for (const p of plan) client.query(p.id, { subtype: 'crm.customer', clid: p.clid });
    await client.waitForCount(before + plan.length, 10_000);
    const replies = client.messages.filter((m) => m.invokeId >= first);
    assert.deepEqual(exactlyOnce(replies, plan.map((p) => p.id)), { missing: [], duplicated: [] });
    const counts = { known: {}, unknown: {}, failing: {} };
    for (const p of plan) {
      const m = replies.find((x) => x.invokeId === p.id);
      counts[p.kind][m.status] = (counts[p.kind][m.status] || 0) + 1;
    }
    assert.deepEqual(counts, {
      known: { [STATUS.E_AG_NO_ERROR]: 20 },
      unknown: { [STATUS.E_AG_HOST_ERROR2]: 20 },
      failing: { [STATUS.E_AG_HOST_ERROR1]: 20 },
    });
  });
});
