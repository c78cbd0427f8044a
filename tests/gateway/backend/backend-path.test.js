'use strict';

// The side that faces the backend, with both HTTP engines and a spy backend that records every
// path it receives: nothing a router sends can move a request to another path, crash the
// process, or fail silently.

const assert = require('node:assert/strict');
const path = require('node:path');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { ENGINE_NAMES } = require('../../../gateway/backend/engines');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const HOSTILE = path.join(__dirname, '..', '..', 'fixtures', 'handlers', 'hostile-answers.js');

for (const engine of ENGINE_NAMES) {
  describe(`backend path (${engine})`, function () {
    this.timeout(20_000);
    let spy;
    let stack;
    let client;
    let id = 1;
    before(async () => {
      spy = await startTestBackend((req, res) => {
        if (req.url.startsWith('/slow')) {
          setTimeout(() => res.end('{"vars":{"1":"slow"}}'), 150);
          return;
        }
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ vars: { 1: req.url.slice(0, 200) } }));
      });
      stack = await startStack({
        backendUrl: spy.url,
        gateway: {
          'backend.engine': engine,
          routes: {
            'cust.info': { url: `${spy.url}/customers/{clid}/info` },
            'two.levels': { url: `${spy.url}/a/{clid}/b/{dn}/c` },
            'with.query': { url: `${spy.url}/search?q={clid}&kind=ani` },
            'slow.route': { url: `${spy.url}/slow/{clid}`, timeoutMs: 40 },
            ['__proto__']: { url: `${spy.url}/proto-route/{clid}` }, // an own key, as JSON.parse makes it
            hostile: { module: HOSTILE },
          },
        },
      });
      client = await WireClient.connect(stack.port);
      await client.open();
    });
    after(async () => {
      client.close();
      await stack.stop();
      await spy.close();
    });

    const ask = async (fields) => {
      const invokeId = ++id;
      client.query(invokeId, fields);
      return client.waitFor((m) => m.invokeId === invokeId);
    };

    it('a placeholder that is empty, "." or ".." fails with E_AG_HOST_ERROR2 and never reaches the backend', async () => {
      for (const [subtype, fields] of [
        ['cust.info', { clid: '..' }], ['cust.info', { clid: '.' }], ['cust.info', { clid: '' }], ['cust.info', {}],
        ['two.levels', { clid: '..', dn: '..' }], ['two.levels', { clid: 'ok', dn: '..' }],
      ]) {
        const before = spy.requests.length;
        const r = await ask({ subtype, ...fields });
        assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR2], JSON.stringify(fields));
        assert.match(r.error, /cannot be a URL path segment/);
        assert.equal(spy.requests.length, before, `nothing sent for ${JSON.stringify(fields)}`);
      }
      assert.ok(stack.log.lines.some((l) => /query refused before the backend: clid is '\.\.'/.test(l.message)));
    });

    it('the default contract refuses a subtype "..", "." or ""', async () => {
      for (const subtype of ['..', '.', '']) {
        const before = spy.requests.length;
        const r = await ask({ subtype });
        assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR2], subtype);
        assert.equal(spy.requests.length, before);
      }
    });

    it('escaped dots and other hostile values stay one segment at the path the template names', async () => {
      for (const clid of ['%2E%2E', '%2e%2e', '...', '../x', 'a/..']) {
        const r = await ask({ subtype: 'cust.info', clid });
        assert.equal(r.status, 0);
        const got = spy.requests.at(-1).url;
        assert.match(got, /^\/customers\/[^/]+\/info$/, `${clid} -> ${got}`);
        assert.equal(decodeURIComponent(got.split('/')[2]), clid);
      }
    });

    it('a route URL with a query string keeps it, with the placeholder encoded', async () => {
      const r = await ask({ subtype: 'with.query', clid: '555 1&x=2' });
      assert.equal(r.status, 0);
      assert.equal(spy.requests.at(-1).url, '/search?q=555%201%26x%3D2&kind=ani');
    });

    it('subtypes named like Object.prototype members reach the backend; a route named __proto__ works', async () => {
      for (const subtype of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
        const r = await ask({ subtype });
        assert.equal(r.status, 0, subtype);
        assert.equal(spy.requests.at(-1).url, `/query/${subtype}`);
      }
      const r = await ask({ subtype: '__proto__', clid: '42' });
      assert.equal(r.status, 0);
      assert.equal(spy.requests.at(-1).url, '/proto-route/42');
    });

    it('routes.<subtype>.timeoutMs is applied: E_AG_HOST_ERROR1 well before the query deadline', async () => {
      const t0 = Date.now();
      const r = await ask({ subtype: 'slow.route', clid: '1' });
      const took = Date.now() - t0;
      assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR1]);
      assert.match(r.error, /within 40 ms/);
      assert.ok(took < 140, `answered after ${took} ms`);
      // A route's timeout is the backend's failure, for its health and its origin's breaker alike.
      assert.equal(stack.gateway.backend.health.toJSON().lastError, 'timeout');
    });

    it('a handler answer that throws when read costs that query only (E_AG_HOST_ERROR1), logged', async () => {
      const unhandled = [];
      const onUnhandled = (e) => unhandled.push(e);
      process.on('unhandledRejection', onUnhandled);
      try {
        for (const clid of ['getter', 'proxy', 'nested-proxy', 'throw']) {
          const r = await ask({ subtype: 'hostile', clid });
          assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR1], clid);
        }
        assert.deepEqual((await ask({ subtype: 'hostile', clid: 'ok' })).vars, { 1: 'fine' });
        await wait(20);
        assert.deepEqual(unhandled, []);
        const text = JSON.stringify(stack.log.lines);
        assert.match(text, /getter exploded/);
        assert.match(text, /keys exploded/);
        assert.match(text, /database connection pool exhausted/, "a throwing handler's text stays in the host's log");
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });
  });
}

describe('backend state: a dead backend is visible', function () {
  this.timeout(20_000);

  it('logs the change to failing and back, shows it on /health and in metrics, counts status classes and latency', async () => {
    let up = true;
    const backend = await startTestBackend((req, res) => {
      if (!up) {
        res.statusCode = 503;
        res.end('down');
        return;
      }
      res.end('{"vars":{"1":"ok"}}');
    });
    // The breaker is off here: this test watches the health state, which an open circuit would freeze.
    const stack = await startStack({ backendUrl: backend.url, gateway: { 'breaker.enabled': false } });
    const c = await WireClient.connect(stack.port);
    const health = async () => (await (await fetch(`http://127.0.0.1:${stack.adminPort}/health`)).json()).backend;
    try {
      await c.open();
      let id = 10;
      const burst = async (n) => {
        const ids = Array.from({ length: n }, () => ++id);
        for (const i of ids) c.query(i, { subtype: 'x' });
        await c.waitFor((m) => m.invokeId === ids.at(-1));
      };
      await burst(3);
      assert.equal((await health()).state, 'reachable');
      up = false;
      await burst(8);
      const h = await health();
      assert.equal(h.state, 'failing');
      assert.equal(h.lastError, 'http_503');
      const failing = stack.log.lines.filter((l) => /^backend failing/.test(l.message));
      assert.equal(failing.length, 1);
      assert.equal(failing[0].level, 'warn');
      let text = await stack.gw.metrics();
      assert.match(text, /^ged145_backend_up 0$/m);
      assert.match(text, /^ged145_backend_responses_total\{class="5xx"\} 8$/m);
      up = true;
      await burst(2);
      assert.equal((await health()).state, 'reachable');
      text = await stack.gw.metrics();
      assert.match(text, /^ged145_backend_up 1$/m);
      assert.match(text, /^ged145_backend_responses_total\{class="2xx"\} 5$/m);
      assert.match(text, /^ged145_backend_duration_seconds_count 13$/m);
      // The way back is logged when it happens, at info (a flapping backend still gets one failing line per 10 s).
      const changes = stack.log.lines.filter((l) => /^backend (failing|reachable again)/.test(l.message));
      assert.deepEqual(changes.map((l) => [l.level, l.message.split(':')[0]]), [['warn', 'backend failing'], ['info', 'backend reachable again']]);
    } finally {
      c.close();
      await stack.stop();
      await backend.close();
    }
  });

  it('an unreachable backend turns failing with the reason', async () => {
    const gone = await startTestBackend(() => {});
    const url = gone.url;
    await gone.close();
    const stack = await startStack({ backendUrl: url });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      for (let i = 0; i < 6; i++) c.query(100 + i, { subtype: 'x' });
      await c.waitForCount(7);
      const line = stack.log.lines.find((l) => /^backend failing/.test(l.message));
      assert.ok(line, 'logged at the default level');
      assert.match(line.lastError, /^unreachable: ECONNREFUSED 127\.0\.0\.1:\d+$/);
    } finally {
      c.close();
      await stack.stop();
    }
  });
});
