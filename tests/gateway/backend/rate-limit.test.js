'use strict';

// An API that says "slow down", goes into maintenance, or sits behind a proxy whose own pages are
// no answer about the caller; and health that one origin's success cannot mask. Real parts: a
// real nginx with limit_req in front of a small API (tests/helpers/limited-api.js), a gateway in
// this process, a router over a real socket. The 10 s versions at the rates are in
// tests/stress/rate-limit.stress.test.js.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { rateRun, realPartsMissing, KNOWN } = require('../../helpers/real-backend');
const { startLimitedApi, startLimitingNginx } = require('../../helpers/limited-api');

/** Every 5th caller unknown to the API (a 404), the others known. */
const clidOf = (id) => (id % 5 === 0 ? `5559${String(id).padStart(6, '0')}` : `555100${String(id % 10_000).padStart(4, '0')}`);
const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** Who got what: known callers' E_AG_HOST_ERROR2 (must be 0), answers, host errors, and any HTML in an ERROR tag. */
function tally(records) {
  const t = {
    knownAppErrors: 0, unknownAppErrors: 0, answered: 0, hostErrors: 0, markup: 0,
  };
  for (const { clid, reply } of records) {
    if (reply.type === 'QUERY_RESP') t.answered++;
    else if (reply.status === STATUS.E_AG_HOST_ERROR2) {
      if (KNOWN.test(clid)) t.knownAppErrors++;
      else t.unknownAppErrors++;
    } else t.hostErrors++;
    if (reply.error !== undefined && /[<>?]|html/i.test(reply.error)) t.markup++;
  }
  return t;
}

async function health(stack) {
  return (await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json()).backend;
}

describe('an API that says slow down, a maintenance window, a proxy\'s pages, and health per origin', function () {
  this.timeout(60_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function setUp(gateway, backendUrl) {
    const stack = await startStack({ backendUrl, gateway });
    cleanup.push(() => stack.stop());
    const c = await WireClient.connect(stack.port);
    cleanup.push(() => c.close());
    await c.open();
    return { stack, c };
  }

  async function limited() {
    const missing = realPartsMissing();
    if (missing !== null) throw new Error(`this test needs ${missing.join(', ')} (.ci/run installs them)`);
    const api = await startLimitedApi();
    cleanup.push(() => api.close());
    const nginx = await startLimitingNginx(api, { rate: 100 });
    cleanup.push(() => nginx.close());
    return { api, nginx };
  }

  it('nginx\'s own 429 page and its 400 page are host errors with their own reasons, never "unknown caller", no HTML in ERROR', async () => {
    const { api, nginx } = await limited();
    const { stack, c } = await setUp({
      routes: {
        page: { method: 'GET', url: `${nginx.url}/page/c/{clid}` },
        bad: { method: 'GET', url: `${nginx.url}/bad?c={clid}` },
      },
      'backend.adaptiveRate.enabled': false, // every query meets nginx: this test is about what its pages mean
      'breaker.enabled': false,
    }, api.url);
    const records = [];
    let id = 10;
    for (const subtype of ['page', 'page', 'bad']) {
      // 60 at once: nginx lets 11 through (burst 10) and answers the rest with its 429 page.
      const first = id;
      const before = c.messages.length;
      for (let i = 0; i < 60; i++, id++) c.query(id, { subtype, clid: clidOf(id) });
      await c.waitForCount(before + 60, 5000);
      for (let i = first; i < id; i++) records.push({ subtype, clid: clidOf(i), reply: c.messages.find((m) => m.invokeId === i) });
      await wait(200);
    }
    const page = tally(records.filter((r) => r.subtype === 'page'));
    const bad = tally(records.filter((r) => r.subtype === 'bad'));
    assert.equal(page.knownAppErrors, 0, JSON.stringify(page));
    assert.ok(page.hostErrors >= 40, `most of the bursts met nginx's 429 page: ${JSON.stringify(page)}`);
    assert.equal(page.markup, 0);
    assert.deepEqual([bad.knownAppErrors, bad.unknownAppErrors, bad.answered, bad.hostErrors, bad.markup], [0, 0, 0, 60, 0]);
    const origin = (await health(stack)).origins[nginx.url];
    assert.ok(origin.byReason.rate_limited >= 40, `nginx's 429 page counted as rate_limited: ${JSON.stringify(origin.byReason)} ${JSON.stringify(page)}`);
    assert.equal(origin.byReason.http_400, 60);
    const warned = stack.log.lines.filter((l) => /rate limited the gateway \(rate_limited\)/.test(l.message));
    assert.equal(warned.length, 1, 'one warning per origin and reason per 10 s');
    assert.equal(stack.log.lines.filter((l) => /answered HTTP 400 with a body that is not the API's \(http_400\)/.test(l.message)).length, 1);
  });

  it('429 Retry-After: 1 at twice the API\'s rate: no known caller is "unknown", the route slows down, few queries meet a 429', async () => {
    const { api, nginx } = await limited();
    const { stack, c } = await setUp({
      routes: { cust: { method: 'GET', url: `${nginx.url}/ra/c/{clid}`, response: { 'vars.1': 'customer.tier' } } },
    }, api.url);
    const records = await rateRun(c, {
      first: 100, rate: 200, durationMs: 3000, subtype: 'cust', clidOf,
    });
    const t = tally(records);
    const h = await health(stack);
    const met429 = h.origins[nginx.url].byReason.rate_limited || 0;
    const figures = `${JSON.stringify(t)}; 429s met: ${met429} of ${records.length}; pacing ${JSON.stringify(h.pacing)}`;
    assert.equal(t.knownAppErrors, 0, figures);
    assert.ok(t.unknownAppErrors > 0 && t.answered > 0, figures);
    assert.ok(met429 >= 1 && met429 <= records.length * 0.1, figures);
    const lane = h.pacing[nginx.url].find((r) => r.route === 'cust');
    assert.ok(lane.ratePerSecond !== null && lane.ratePerSecond < 200, `a rate was learnt: ${figures}`);
    assert.ok(lane.refused > 0, figures);
  });

  it('a 503 Retry-After window: calls pause for it, queries get the fallback at once, one probe, answers resume', async () => {
    const api = await startLimitedApi();
    cleanup.push(() => api.close());
    const { stack, c } = await setUp({
      routes: { cust: { method: 'GET', url: `${api.url}/c/{clid}`, response: { 'vars.1': 'customer.tier' } } },
      fallback: { vars: { 1: 'fallback' } },
    }, api.url);
    await rateRun(c, {
      first: 100, rate: 100, durationMs: 500, subtype: 'cust', clidOf,
    });
    const before = api.stats.requests;
    api.maintenance(2000, 2);
    const windowStart = Date.now();
    const records = await rateRun(c, {
      first: 1000, rate: 100, durationMs: 3500, subtype: 'cust', clidOf,
    });
    const inWindow = api.stats.times.filter((at) => at >= windowStart && at < windowStart + 2000).length;
    const t = tally(records);
    const figures = `${inWindow} requests reached the API in the 2 s window (${api.stats.requests - before} in 3.5 s); ${JSON.stringify(t)}`;
    assert.ok(inWindow <= 4, figures);
    assert.equal(t.knownAppErrors, 0, figures);
    const fallbacks = records.filter((r) => r.reply.vars && r.reply.vars[1] === 'fallback').length;
    assert.ok(fallbacks >= 150, `the window's queries got the fallback: ${fallbacks}; ${figures}`);
    const late = records.slice(-80);
    assert.ok(late.every((r) => !(r.reply.vars && r.reply.vars[1] === 'fallback')), `answers resumed after the window: ${figures}`);
    assert.equal(api.stats.inMaintenance <= 4, true, figures);
    assert.ok(records.every((r) => r.latencyMs < 250), 'never waited past the deadline');
    const told = stack.log.lines.filter((l) => /^backend http:\/\/127\.0\.0\.1:\d+ \(subtype cust\) asked to wait \(Retry-After\): no calls for \d+ ms/.test(l.message));
    assert.equal(told.length, 1, 'one warning for the pause');
  });

  it('a single-origin circuit against a backend failing 100 ms of every 200 changes state at most once per minOpenMs and logs little', async () => {
    // 100 ms failing, 100 ms answering: the failure ratio reaches 0.5 within a second, and an
    // answer comes within 100 ms. Without minOpenMs the circuit opened and closed every 0.4 s.
    const b = await startTestBackend((req, res) => {
      const down = Math.floor(Date.now() / 100) % 2 === 0;
      res.statusCode = down ? 500 : 200;
      res.end(down ? '{"error":"x"}' : '{"vars":{"1":"ok"}}');
    });
    cleanup.push(() => b.close());
    const { stack, c } = await setUp({ 'breaker.minOpenMs': 2000 }, b.url);
    await rateRun(c, {
      first: 100, rate: 100, durationMs: 4000, subtype: 's', clidOf,
    });
    const lines = stack.log.lines.filter((l) => /^backend circuit (open|half-open|closed)/.test(l.message));
    const closes = lines.filter((l) => /circuit closed/.test(l.message)).length;
    assert.ok(lines.length >= 1 && lines.length <= 4, lines.map((l) => l.message.slice(0, 40)).join(' | '));
    assert.ok(closes <= 2, `${closes} closes in 4 s with minOpenMs 2 s`);
  });

  it('an origin that refuses every connection shows down on /health and ged145_backend_up while another answers; promtool accepts /metrics', async () => {
    const good = await startTestBackend((req, res) => res.end('{"vars":{"1":"ok"}}'));
    cleanup.push(() => good.close());
    const gone = await startTestBackend(() => {});
    const deadUrl = gone.url;
    await gone.close();
    const { stack, c } = await setUp({
      routes: {
        crm: { method: 'GET', url: `${deadUrl}/c/{clid}` },
        other: { method: 'GET', url: `${good.url}/c/{clid}` },
      },
    }, good.url);
    let id = 10;
    c.query(id++, { subtype: 'other', clid: '1' });
    await c.waitForCount(2);
    for (let i = 0; i < 20; i++) {
      c.query(id++, { subtype: 'other', clid: '1' });
      c.query(id++, { subtype: 'crm', clid: '1' });
    }
    await c.waitForCount(42);
    const h = await health(stack);
    assert.equal(h.state, 'failing', 'the process is as healthy as its worst origin');
    assert.deepEqual(h.failing, [{ origin: deadUrl, route: 'crm' }]);
    assert.equal(h.origins[deadUrl].state, 'failing');
    assert.equal(h.origins[good.url].state, 'reachable');
    const line = stack.log.lines.find((l) => /^backend failing/.test(l.message));
    assert.ok(line.message.includes(`${deadUrl} (subtype crm)`) && line.message.endsWith(`${good.url} still answering`), line.message);
    const text = await (await fetch(`http://127.0.0.1:${stack.adminPort}/metrics`)).text();
    const esc = (u) => u.replace(/[/.]/g, '\\$&');
    assert.match(text, /^ged145_backend_up 0$/m);
    assert.match(text, new RegExp(`^ged145_backend_up\\{origin="${esc(deadUrl)}"\\} 0$`, 'm'));
    assert.match(text, new RegExp(`^ged145_backend_up\\{origin="${esc(good.url)}"\\} 1$`, 'm'));
    assert.match(text, new RegExp(`^ged145_backend_up\\{origin="${esc(deadUrl)}",route="crm"\\} 0$`, 'm'));
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}`);
  });
});
