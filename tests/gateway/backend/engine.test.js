'use strict';

// The undici engine's own handler (Pool.dispatch, not pool.request): bodies that arrive in
// pieces, and aborts before, during and while waiting for a connection, against a real server,
// with an AbortController's signal and with a query's QuerySignal; and what both engines do with
// a body they read themselves: an abort in the middle of it, the size limit.

const assert = require('node:assert/strict');
const sinon = require('sinon');
const { createEngine, engineOptions } = require('../../../gateway/backend/engines');
const { DEFAULTS } = require('../../../gateway/config');

const OPTIONS = engineOptions(DEFAULTS.backend); // what a gateway that sets nothing gives its engine
const { QuerySignal, DEADLINE } = require('../../../gateway/backend/abort');
const { startTestBackend } = require('../../helpers/stack');
const { startTinyproxy } = require('../../helpers/real-backend');
const { compileProxy } = require('../../../gateway/config/backend');

/**
 * undici's timers module as its Pool loaded it, found in the module cache (the product reaches
 * undici's files only through engines/undici-parts.js): its setFastTimeout calls are the timers.
 */
function undiciTimers() {
  const file = Object.keys(require.cache).find((f) => /[\\/]undici[\\/]lib[\\/]util[\\/]timers\.js$/.test(f));
  assert.ok(file, 'undici has no lib/util/timers.js any more: this test reads its setFastTimeout calls, and needs the new place');
  return require.cache[file].exports;
}

/** The headers and body timers a setFastTimeout spy saw started (a new connection's connect timeout is one too: not counted). */
const parserTimers = (spy) => spy.getCalls().filter((c) => c.args[0].name === 'onParserTimeout').length;

describe('undici engine', () => {
  let backend;
  let engine;
  let behaviour;

  beforeEach(async () => {
    behaviour = (req, res) => res.end('{}');
    backend = await startTestBackend((req, res, entry) => behaviour(req, res, entry));
  });

  afterEach(async () => {
    await engine.close();
    await backend.close();
  });

  const post = (signal) => engine.request({
    origin: backend.url, path: '/q', method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}', signal,
  });

  it('joins a body sent in pieces, a character split across two of them included', async () => {
    engine = createEngine('undici', OPTIONS);
    const bytes = Buffer.from('{"vars":{"1":"Jos\u00e9"}}');
    const cut = bytes.indexOf(0xc3) + 1; // between the two bytes of é
    behaviour = (req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.write(bytes.subarray(0, cut));
      setTimeout(() => res.end(bytes.subarray(cut)), 20);
    };
    const r = await post();
    assert.equal(r.status, 201);
    assert.deepEqual(JSON.parse(r.text), { vars: { 1: 'Jos\u00e9' } });
    assert.equal(backend.requests[0].body, '{"a":1}');
  });

  it('a request with a signal starts none of undici\'s own header and body timers (its signal bounds it); one without does', async () => {
    // Each such timer lives until undici's next half-second tick: at 30,000 queries a second, 15,000
    // of them alive at a time, every one promoted to the old generation (docs/performance.md).
    engine = createEngine('undici', OPTIONS);
    const timers = sinon.spy(undiciTimers(), 'setFastTimeout');
    try {
      for (let i = 0; i < 20; i++) assert.equal((await post(new QuerySignal())).status, 200);
      for (let i = 0; i < 20; i++) assert.equal((await post(new AbortController().signal)).status, 200);
      assert.equal(parserTimers(timers), 0);
      for (let i = 0; i < 5; i++) assert.equal((await post()).status, 200);
      assert.ok(parserTimers(timers) >= 5, `${parserTimers(timers)} timers for 5 requests without a signal`);
    } finally {
      timers.restore();
    }
  });

  it('an http origin through a forward proxy (a real tinyproxy, requests in absolute form): answered, and no undici timer with a signal', async function () {
    this.timeout(20_000);
    const proxy = await startTinyproxy();
    engine = createEngine('undici', { ...OPTIONS, proxy: compileProxy(proxy.url, {}) });
    const timers = sinon.spy(undiciTimers(), 'setFastTimeout');
    try {
      for (let i = 0; i < 5; i++) assert.equal((await post(new QuerySignal())).status, 200);
      assert.equal(backend.requests.length, 5);
      assert.ok(proxy.requests() >= 5, `${proxy.requests()} requests through the proxy`);
      assert.equal(parserTimers(timers), 0);
    } finally {
      timers.restore();
      await proxy.close();
    }
  });

  // The session's own QuerySignal, and a real AbortController as any other caller would give.
  const SIGNALS = {
    AbortController: () => new AbortController(),
    QuerySignal: () => { const s = new QuerySignal(); return { signal: s, abort: (reason) => s.abort(reason) }; },
  };
  for (const [kind, makeSignal] of Object.entries(SIGNALS)) {
    it(`an already aborted signal fails at once and sends nothing (${kind})`, async () => {
      engine = createEngine('undici', OPTIONS);
      const c = makeSignal();
      c.abort(DEADLINE);
      await assert.rejects(post(c.signal), { reason: 'deadline' });
      assert.equal(backend.requests.length, 0);
    });

    it(`an abort mid-request closes the backend request; a later request still works (${kind})`, async () => {
      engine = createEngine('undici', OPTIONS);
      behaviour = () => {}; // never answers
      const c = makeSignal();
      const pending = post(c.signal);
      while (backend.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      c.abort();
      await assert.rejects(pending, { reason: 'aborted' });
      while (!backend.requests[0].closed) await new Promise((r) => setTimeout(r, 5));
      behaviour = (req, res) => res.end('{"ok":true}');
      assert.deepEqual(await post(), { status: 200, text: '{"ok":true}' });
    });

    it(`an abort while waiting for a free connection fails at once; the held request is unaffected (${kind})`, async () => {
      engine = createEngine('undici', { ...OPTIONS, connections: 1 });
      let release;
      behaviour = (req, res) => { release = () => res.end('{"first":true}'); };
      const first = post();
      while (backend.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      const c = makeSignal();
      const queued = post(c.signal);
      c.abort(DEADLINE);
      await assert.rejects(queued, { reason: 'deadline' }); // before the connection is free
      release();
      assert.deepEqual(await first, { status: 200, text: '{"first":true}' });
      behaviour = (req, res) => res.end('{}');
      assert.equal((await post()).status, 200);
      assert.equal(backend.requests.length, 2, 'the aborted request never reached the backend');
    });
  }

  it('axios gets a real AbortSignal for a QuerySignal, and its abort', async () => {
    engine = createEngine('axios', OPTIONS);
    behaviour = () => {}; // never answers
    const s = new QuerySignal();
    const pending = post(s);
    while (backend.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    s.abort(DEADLINE);
    await assert.rejects(pending, { reason: 'deadline' });
    while (!backend.requests[0].closed) await new Promise((r) => setTimeout(r, 5));
  });

  // Both engines read the body themselves, as it arrives: an abort or the size limit in the middle of it.
  for (const name of ['undici', 'axios']) {
    it(`${name}: an abort after the headers, while the body arrives, fails with its reason and closes the connection; the engine goes on`, async () => {
      engine = createEngine(name, OPTIONS);
      behaviour = (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write('{"vars":'); }; // never ends
      const s = new QuerySignal();
      const pending = post(s);
      while (backend.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 50)); // the headers and the first bytes are in
      s.abort(DEADLINE);
      await assert.rejects(pending, { reason: 'deadline' });
      while (!backend.requests[0].closed) await new Promise((r) => setTimeout(r, 5));
      behaviour = (req, res) => res.end('{"ok":true}');
      assert.deepEqual(await post(), { status: 200, text: '{"ok":true}' });
    });

    it(`${name}: a body over maxResponseBytes, in pieces, is too_large`, async () => {
      engine = createEngine(name, { ...OPTIONS, maxResponseBytes: 1000 });
      behaviour = (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('x'.repeat(600));
        setTimeout(() => res.end('x'.repeat(600)), 20);
      };
      await assert.rejects(post(), { reason: 'too_large' });
      behaviour = (req, res) => res.end('x'.repeat(1000));
      assert.equal((await post()).text.length, 1000, 'up to the limit is an answer');
    });
  }
});
