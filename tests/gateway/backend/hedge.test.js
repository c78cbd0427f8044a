'use strict';

// backend.hedge, with the real backend (every layer, the undici engine) and two real HTTP origins
// on 127.0.0.1 whose answers each test scripts: a query still unanswered after afterMs sends one
// more request to the next origin whose circuit is not open; the first answer wins and the other
// request is aborted, without counting against its origin; a failure never beats a request still
// pending; no hedge past the budget, to an open circuit, or with less than afterMs of the
// deadline left; and none at all when backend.hedge is not set. What reads the clock here is
// generous (a hedge at 80 ms, slow answers at 400 ms); the in-time figure is hedge-figure.test.js.

const assert = require('node:assert/strict');
const dc = require('node:diagnostics_channel');
const { performance } = require('node:perf_hooks');
const { loadConfig } = require('../../../gateway/config');
const { Backend } = require('../../../gateway/backend');
const { startTestBackend } = require('../../helpers/stack');

const ANSWER = (name) => JSON.stringify({ vars: { 1: name } });

/** An origin answering each request as script(n) says ({ms, status, name}), n counting its requests from 1. */
async function origin(name) {
  const o = { script: null, n: 0 };
  const server = await startTestBackend((req, res, entry) => {
    res.on('close', () => { entry.ended = true; }); // after the helper's own listener has set entry.closed
    const { ms = 0, status = 200 } = o.script(++o.n);
    setTimeout(() => {
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 200 ? ANSWER(name) : '{"error":"busy"}');
    }, ms);
  });
  return Object.assign(o, server);
}

/** Resolves once the server saw `count` requests end, answered or cut. */
async function settled(o, count) {
  const until = Date.now() + 5000;
  while (o.requests.filter((r) => r.ended).length < count && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}

describe('backend.hedge: one more request to the next origin when the first is slow', function () {
  this.timeout(30_000);
  let a;
  let b;
  let backend;
  let hedges;
  const onHedge = (m) => hedges.push(m);

  before(async () => {
    [a, b] = await Promise.all([origin('a'), origin('b')]);
    dc.subscribe('ged145:backend:hedge', onHedge);
  });

  after(async () => {
    dc.unsubscribe('ged145:backend:hedge', onHedge);
    await Promise.all([a.close(), b.close()]);
  });

  beforeEach(() => {
    hedges = [];
    a.requests.length = 0;
    b.requests.length = 0;
    for (const o of [a, b]) {
      o.n = 0;
      o.script = () => ({ ms: 0, status: 200 });
    }
  });

  afterEach(async () => {
    if (backend) await backend.close();
    backend = null;
  });

  function start(overrides = {}) {
    const config = loadConfig({
      overrides: {
        'backend.url': [a.url, b.url], deadlineMs: 1000, routerRequestTimeoutMs: 2000, 'backend.hedge': { afterMs: 80 }, ...overrides,
      },
    });
    backend = new Backend(config, { owner: 'hedge-test' });
    return backend;
  }

  let invokeId = 0;
  const ask = (deadlineMs = 1000, subtype = 'lookup') => new Promise((resolve) => {
    const at = performance.now();
    backend.dispatch({ subtype, invokeId: ++invokeId, clid: '5551000001' }, at + deadlineMs, 1, {
      onOutcome: (outcome) => resolve({ outcome, ms: performance.now() - at }),
    });
  });
  const failures = (origin) => backend.toJSON().origins[origin].failures;

  it('a slow first origin: the hedge to the second answers, the slow request is cut and not counted against its origin', async () => {
    start();
    a.script = () => ({ ms: 400 });
    const { outcome, ms } = await ask();
    assert.deepEqual(outcome, { kind: 'ok', answer: { vars: { 1: 'b' } } });
    assert.ok(ms < 400, `answered by the hedge, not the slow origin (${ms} ms)`);
    await settled(a, 1);
    assert.equal(a.requests[0].closed, true, 'the slow request was aborted');
    assert.equal(b.requests.length, 1);
    assert.deepEqual(hedges.map((h) => [h.result, h.origin, h.gateway]), [['won', b.url, 'hedge-test']]);
    assert.ok(hedges.every((h) => h.query !== undefined && h.query !== null), 'each message names its query (docs/diagnostics.md)');
    assert.equal(failures(a.url), 0, 'an abort by the hedge is no failure of its origin');
    assert.equal(backend.toJSON().origins[a.url].routes[0].consecutiveFailures, 0);
  });

  it('a first origin that answers before afterMs: no hedge; one that answers first after the hedge went: the hedge is cut', async () => {
    start();
    b.script = () => ({ ms: 400 });
    a.script = (n) => ({ ms: n === 1 ? 0 : 150 });
    assert.equal((await ask()).outcome.answer.vars[1], 'a');
    assert.equal(b.requests.length, 0);
    assert.equal((await ask()).outcome.answer.vars[1], 'a');
    await settled(b, 1);
    assert.equal(b.requests.length, 1);
    assert.equal(b.requests[0].closed, true, 'the hedge that lost was aborted');
    assert.deepEqual(hedges.map((h) => h.result), ['lost']);
    assert.equal(failures(b.url), 0);
  });

  it('a failure does not beat a request still pending: a 503 from the first waits for the hedge\'s answer', async () => {
    start();
    a.script = () => ({ ms: 150, status: 503 });
    b.script = () => ({ ms: 200 });
    const { outcome } = await ask();
    assert.deepEqual(outcome, { kind: 'ok', answer: { vars: { 1: 'b' } } });
    assert.deepEqual(hedges.map((h) => h.result), ['won']);
    assert.equal(failures(a.url), 1, 'the 503 itself is the origin\'s failure');
  });

  it('both fail: the query gets the first request\'s failure, each origin counts its own', async () => {
    start();
    a.script = () => ({ ms: 150, status: 503 });
    b.script = () => ({ ms: 20, status: 502 });
    const { outcome } = await ask();
    assert.deepEqual([outcome.kind, outcome.reason], ['host_error', 'http_503']);
    assert.deepEqual(hedges.map((h) => h.result), ['lost']);
    assert.deepEqual([failures(a.url), failures(b.url)], [1, 1]);
  });

  it('a first request that fails before afterMs is the query\'s outcome at once: a hedge is for the slow, not a retry', async () => {
    start();
    a.script = () => ({ ms: 0, status: 503 });
    const { outcome } = await ask();
    assert.equal(outcome.reason, 'http_503');
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(b.requests.length, 0);
    assert.deepEqual(hedges, []);
  });

  it('the hedges are capped: past maxPercent of the queries (and the first three), a due hedge is not sent', async () => {
    start({ 'backend.hedge': { afterMs: 80, maxPercent: 1 } });
    a.script = () => ({ ms: 400 });
    const results = [];
    for (let i = 0; i < 5; i++) results.push((await ask()).outcome.answer.vars[1]);
    assert.deepEqual(results, ['b', 'b', 'b', 'a', 'a']);
    assert.deepEqual(hedges.map((h) => h.result), ['won', 'won', 'won', 'over_budget', 'over_budget']);
    assert.equal(b.requests.length, 3);
  });

  it('no hedge with less than afterMs of the deadline left when it is due', async () => {
    start();
    a.script = () => ({ ms: 150 });
    const { outcome } = await ask(150); // at 80 ms, 70 ms left
    assert.equal(outcome.answer.vars[1], 'a');
    assert.equal(b.requests.length, 0);
  });

  it('no hedge to an origin whose circuit is open', async () => {
    start({
      'backend.strategy': 'balance',
      breaker: {
        enabled: true, minimumCalls: 2, failureRatio: 0.5, windowMs: 10_000, halfOpenAfterMs: 60_000, maxHalfOpenAfterMs: 60_000,
      },
    });
    b.script = () => ({ ms: 0, status: 503 });
    a.script = () => ({ ms: 0 });
    for (let i = 0; i < 4; i++) await ask(); // two to each: b's circuit opens
    assert.equal(backend.toJSON().circuits[b.url].state, 'open');
    const before = b.requests.length;
    a.script = () => ({ ms: 150 });
    for (let i = 0; i < 2; i++) assert.equal((await ask()).outcome.answer.vars[1], 'a');
    assert.equal(b.requests.length, before, 'nothing sent to the open circuit\'s origin');
    assert.deepEqual(hedges, []);
  });

  it('the hedge shows on the request channels: attempt 2, retry hedge, to the second origin', async () => {
    start();
    a.script = () => ({ ms: 300 });
    const starts = [];
    const onStart = ({ request }) => starts.push([request.origin, request.attempt, request.retry]);
    dc.subscribe('ged145:backend:request:start', onStart);
    try {
      await ask();
    } finally {
      dc.unsubscribe('ged145:backend:request:start', onStart);
    }
    assert.deepEqual(starts, [[a.url, 1, null], [b.url, 2, 'hedge']]);
  });

  it('off (no backend.hedge): a slow first origin is waited for, the second never asked', async () => {
    start({ 'backend.hedge': null });
    a.script = () => ({ ms: 200 });
    const { outcome } = await ask();
    assert.equal(outcome.answer.vars[1], 'a');
    assert.equal(b.requests.length, 0);
    assert.deepEqual(hedges, []);
  });
});
