'use strict';

// What the gateway does with what an HTTP backend does: a connection broken on reuse, statuses
// and their outcomes, basic and bearer credentials, ${NAME} in headers, a handler's error text
// under log.redact. A real gateway (in process) over loopback sockets against real HTTP servers.

const assert = require('node:assert/strict');
const net = require('node:net');
const fs = require('node:fs');
const path = require('node:path');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { tmpDir } = require('../../helpers/tmp');

/**
 * An HTTP/1.1 server that answers the first request on each connection and resets the connection
 * when a second one arrives on it, before answering: what a server or proxy closing an idle
 * keep-alive connection does to the request that reuses it.
 */
async function startResettingServer() {
  const stats = { connections: 0, answered: 0, reset: 0 };
  const server = net.createServer((socket) => {
    stats.connections++;
    let requests = 0;
    let buf = '';
    socket.on('error', () => {});
    socket.on('data', (d) => {
      buf += d;
      while (buf.includes('\r\n\r\n')) {
        buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
        requests++;
        if (requests > 1) {
          stats.reset++;
          socket.resetAndDestroy();
          return;
        }
        stats.answered++;
        const body = JSON.stringify({ vars: { 1: 'fresh' } });
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n${body}`);
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, stats, close: () => new Promise((r) => { server.close(r); }) };
}

async function withStack(gateway, fn, opts = {}) {
  const stack = await startStack({ gateway, ...opts });
  const client = await WireClient.connect(stack.port);
  try {
    await client.open();
    let id = 100;
    const ask = async (fields) => {
      const invokeId = ++id;
      client.query(invokeId, fields);
      return client.waitFor((m) => m.invokeId === invokeId);
    };
    await fn({ ask, stack, client });
  } finally {
    client.close();
    await stack.stop();
  }
}

describe('backend HTTP behaviour', function () {
  this.timeout(30_000);

  it('a request broken on a reused connection before any answer goes again on another: every query answered, no evidence against the origin', async () => {
    const backend = await startResettingServer();
    try {
      const gateway = { 'backend.url': backend.url, 'backend.connections': 1, routes: { k: { method: 'GET', url: `${backend.url}/k/{clid}` } } };
      await withStack(gateway, async ({ ask, stack }) => {
        for (let i = 0; i < 20; i++) {
          const r = await ask({ subtype: 'k', clid: `555${i}` });
          assert.equal(r.type, 'QUERY_RESP', JSON.stringify(r));
          assert.equal(r.vars[1], 'fresh');
        }
        assert.ok(backend.stats.reset >= 10, `the server broke reused connections (${backend.stats.reset})`);
        const metrics = await stack.gw.metrics();
        assert.match(metrics, new RegExp(`ged145_backend_reconnects_total ${backend.stats.reset}\\b`));
        const health = stack.gateway.backend.toJSON();
        assert.equal(health.consecutiveFailures, 0);
        assert.equal(health.origins[backend.url].failures, 0);
      });
    } finally {
      await backend.close();
    }
  });

  it('a server\'s Keep-Alive: timeout= is honoured: a connection idle past it, less a second, is not used again', async () => {
    const backend = await startTestBackend((req, res) => res.end('{"vars": {"1": "x"}}'));
    backend.server.keepAliveTimeout = 2000; // Node sends "Keep-Alive: timeout=2"
    const sockets = new Set();
    backend.server.on('connection', (s) => sockets.add(s));
    try {
      await withStack({ 'backend.url': backend.url }, async ({ ask }) => {
        await ask({ subtype: 'a', clid: '1' });
        await ask({ subtype: 'a', clid: '2' });
        assert.equal(sockets.size, 1, 'reused at once');
        await new Promise((r) => setTimeout(r, 1300));
        const r = await ask({ subtype: 'a', clid: '3' });
        assert.equal(r.type, 'QUERY_RESP');
        assert.equal(sockets.size, 2, 'idle for 1.3 s, past the hint less its margin (1 s), so a new connection (backend.keepAliveTimeoutMs is 4 s)');
      });
    } finally {
      await backend.close();
    }
  });

  it('"idempotent": false: a route that changes state is never sent twice; the break is its answer (E_AG_HOST_ERROR1, reset)', async () => {
    const backend = await startResettingServer();
    try {
      await withStack({
        'backend.url': backend.url, 'backend.connections': 1, routes: { book: { method: 'POST', url: `${backend.url}/book/{clid}`, idempotent: false } },
      }, async ({ ask, stack }) => {
        const replies = [];
        for (let i = 0; i < 10; i++) replies.push(await ask({ subtype: 'book', clid: `555${i}` }));
        const failed = replies.filter((r) => r.type === 'FAILURE_CONF');
        assert.equal(failed.length, backend.stats.reset, 'each broken request failed, none was sent again');
        assert.ok(failed.length >= 4);
        assert.ok(failed.every((r) => r.status === STATUS.E_AG_HOST_ERROR1));
        assert.equal(stack.gateway.backend.toJSON().origins[backend.url].byReason.reset, failed.length);
        assert.doesNotMatch(await stack.gw.metrics(), /ged145_backend_reconnects_total [1-9]/);
      });
    } finally {
      await backend.close();
    }
  });

  it('statuses: 401 and 403 are the gateway\'s own failure (unauthorized), 404 and the API\'s own 4xx answers, and a route maps its own', async () => {
    const backend = await startTestBackend((req, res) => {
      const status = Number(req.url.split('/')[2]);
      res.statusCode = status;
      res.setHeader('content-type', 'application/json');
      res.end(status === 404 ? '' : JSON.stringify({ error: `status ${status}`, vars: { 1: `s${status}` } }));
    });
    try {
      const route = (extra = {}) => ({ method: 'GET', url: `${backend.url}/s/{clid}`, ...extra });
      await withStack({
        'backend.url': backend.url,
        routes: { plain: route(), mapped: route({ statuses: { 404: 'ok', 409: 'ok', 410: 'host_error', 403: 'app_error' } }) },
      }, async ({ ask, stack }) => {
        const plain = {};
        for (const s of [401, 403, 404, 409, 500]) plain[s] = await ask({ subtype: 'plain', clid: String(s) });
        assert.equal(plain[401].status, STATUS.E_AG_HOST_ERROR1);
        assert.equal(plain[403].status, STATUS.E_AG_HOST_ERROR1);
        assert.equal(plain[404].status, STATUS.E_AG_HOST_ERROR2);
        assert.equal(plain[409].status, STATUS.E_AG_HOST_ERROR2);
        assert.equal(plain[500].status, STATUS.E_AG_HOST_ERROR1);
        const origin = stack.gateway.backend.toJSON().origins[backend.url];
        assert.equal(origin.byReason.unauthorized, 2);
        assert.equal(origin.byReason.http_500, 1);
        assert.equal(stack.log.lines.filter((l) => /refused the gateway's credentials \(HTTP 401\); check backend\.auth/.test(l.message)).length, 1);
        const mapped = {};
        for (const s of [403, 404, 409, 410]) mapped[s] = await ask({ subtype: 'mapped', clid: String(s) });
        assert.equal(mapped[404].type, 'QUERY_RESP', 'ok with an empty body: no tags');
        assert.equal(mapped[404].vars, undefined);
        assert.equal(mapped[409].type, 'QUERY_RESP');
        assert.equal(mapped[409].vars[1], 's409');
        assert.equal(mapped[410].status, STATUS.E_AG_HOST_ERROR1);
        assert.equal(mapped[403].status, STATUS.E_AG_HOST_ERROR2);
        assert.equal(mapped[403].error, 'status 403');
      });
    } finally {
      await backend.close();
    }
  });

  it('statuses on every route kind: backend.statuses, a contract route\'s own, a module route (ctx.request answers, thrown statuses)', async () => {
    // A SOAP-like service: "not found" is HTTP 500 with a fault body; a maintenance page is 503 HTML.
    const backend = await startTestBackend((req, res) => {
      const what = req.url.split('/').pop();
      if (what === 'fault') {
        res.statusCode = 500;
        res.end('{"fault":{"text":"no such customer"}}');
      } else if (what === 'page') {
        res.statusCode = 500;
        res.end('<html><body>proxy error</body></html>');
      } else if (what === 'gone' || what === 'own') {
        res.statusCode = 410;
        res.end('{"error":"customer closed"}');
      } else res.end('{"vars":{"1":"ok"}}');
    });
    const dir = tmpDir('ged145-statuses-');
    const handler = path.join(dir, 'soap.js');
    fs.writeFileSync(handler, `module.exports = async (q, ctx) => {
  if (q.clid === 'throw-409') throw Object.assign(new Error('on hold'), { status: 409 });
  if (q.clid === 'throw-503') throw Object.assign(new Error('closed today'), { status: 503 });
  if (q.clid === 'throw-429') throw Object.assign(new Error('too fast'), { status: 429 });
  const r = await ctx.request('${backend.url}/soap/' + q.clid);
  if (r.status === 500) throw Object.assign(new Error(JSON.parse(r.text).fault.text), { status: 404 });
  return r.json();
};`);
    try {
      await withStack({
        'backend.url': backend.url,
        'backend.statuses': { 500: 'app_error' },
        'backend.errorPath': 'fault.text',
        'breaker.minimumCalls': 3,
        routes: {
          own: { statuses: { 410: 'ok' } }, // the default contract, this subtype's own statuses
          soap: { module: handler, statuses: { 500: 'app_error', 503: 'app_error' } },
        },
      }, async ({ ask, stack }) => {
        // The default contract (POST /query/{subtype}): backend.statuses and backend.errorPath.
        const fault = await ask({ subtype: 'fault' });
        assert.deepEqual([fault.status, fault.error], [STATUS.E_AG_HOST_ERROR2, 'no such customer']);
        const page = await ask({ subtype: 'page' });
        assert.equal(page.status, STATUS.E_AG_HOST_ERROR1, 'mapped to app_error, but a page that is not the API\'s');
        assert.doesNotMatch(page.error, /html/);
        assert.equal((await ask({ subtype: 'gone' })).status, STATUS.E_AG_HOST_ERROR1, 'a 410 without anything at errorPath');
        // A contract route with its own statuses keeps the contract's errorPath and adds its mapping.
        const own = backend.requests.length;
        const r = await ask({ subtype: 'own', clid: 'x' });
        assert.equal(r.type, 'QUERY_RESP', 'the same 410, mapped to ok for this subtype');
        assert.equal(backend.requests[own].url, '/query/own');
        // The module route: its ctx.request 500 faults are answers (no failures against the origin).
        for (let i = 0; i < 5; i++) {
          const soap = await ask({ subtype: 'soap', clid: 'fault' });
          assert.deepEqual([soap.status, soap.error], [STATUS.E_AG_HOST_ERROR2, 'no such customer']);
        }
        const thrown = {};
        for (const clid of ['throw-409', 'throw-503', 'throw-429']) thrown[clid] = await ask({ subtype: 'soap', clid });
        assert.deepEqual([thrown['throw-409'].status, thrown['throw-409'].error], [STATUS.E_AG_HOST_ERROR2, 'on hold']);
        const closed = thrown['throw-503'];
        assert.deepEqual([closed.status, closed.error], [STATUS.E_AG_HOST_ERROR2, 'closed today'], 'mapped by the route');
        assert.equal(thrown['throw-429'].status, STATUS.E_AG_HOST_ERROR1);
        const h = stack.gateway.backend.toJSON();
        const soapLane = h.origins[backend.url].routes.find((l) => l.route === 'soap');
        assert.deepEqual([soapLane.state, soapLane.consecutiveFailures], ['reachable', 0]);
        assert.equal(h.origins[backend.url].byReason.http_500, 1, 'only the contract\'s proxy page');
        assert.equal(h.circuits[backend.url].routes.find((l) => l.route === 'soap').state, 'closed');
      });
    } finally {
      await backend.close();
    }
  });

  it('basic and bearer credentials, ${NAME} in backend.headers and a secret from a file reach the backend; a route with auth false sends none', async () => {
    const backend = await startTestBackend((req, res) => res.end('{}'));
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'api-token'), 'file-token-123\n');
    try {
      await withStack({
        'backend.url': backend.url,
        'backend.headers': { 'x-api-key': 'key-${GED145_TEST_KEY}' },
        'backend.auth': { type: 'basic', username: 'ged', password: '${GED145_TEST_PASSWORD}' },
        routes: {
          bearer: { method: 'GET', url: `${backend.url}/b`, auth: { type: 'bearer', tokenFile: path.join(dir, 'api-token') } },
          none: { method: 'GET', url: `${backend.url}/n`, auth: false },
        },
      }, async ({ ask, stack }) => {
        await ask({ subtype: 'x', clid: '1' });
        await ask({ subtype: 'bearer', clid: '1' });
        await ask({ subtype: 'none', clid: '1' });
        const [contract, bearer, none] = backend.requests;
        assert.equal(contract.headers['x-api-key'], 'key-k3y');
        assert.equal(contract.headers.authorization, `Basic ${Buffer.from('ged:pa55').toString('base64')}`);
        assert.equal(bearer.headers.authorization, 'Bearer file-token-123');
        assert.equal(none.headers.authorization, undefined);
        const seen = JSON.stringify(await stack.gw.snapshot()) + stack.log.lines.map((l) => JSON.stringify(l)).join('\n');
        for (const secret of ['pa55', 'file-token-123']) assert.ok(!seen.includes(secret), `${secret} is in no log line or /status`);
      }, { env: { GED145_TEST_KEY: 'k3y', GED145_TEST_PASSWORD: 'pa55' } });
    } finally {
      await backend.close();
    }
  });

  it('under log.redact, a handler\'s error text keeps no caller data; timeoutMs bounds a handler', async () => {
    const dir = tmpDir();
    const handler = path.join(dir, 'failing.js');
    fs.writeFileSync(handler, `module.exports = async (q, ctx) => {
  if (q.clid === 'slow') return new Promise((resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  throw new Error('lookup failed for phone ' + q.clid + ' (account ' + q.vars[1] + ', +1 555-123-4567)');
};\n`);
    await withStack({ 'log.redact': true, routes: { f: { module: handler }, slow: { module: handler, timeoutMs: 40 } } }, async ({ ask, stack }) => {
      const r = await ask({ subtype: 'f', clid: '5551001301', vars: { 1: 'AC-77' } });
      assert.equal(r.status, STATUS.E_AG_HOST_ERROR1);
      const line = stack.log.lines.find((l) => l.message.startsWith('handler module failed'));
      assert.ok(line, 'the failure is logged');
      for (const data of ['5551001301', 'AC-77', '4567']) assert.ok(!line.message.includes(data), `${data} is not in "${line.message}"`);
      assert.match(line.message, /lookup failed for phone \[redacted\]/);
      const started = Date.now();
      const slow = await ask({ subtype: 'slow', clid: 'slow' });
      assert.equal(slow.status, STATUS.E_AG_HOST_ERROR1);
      assert.ok(Date.now() - started < 200, 'answered at the route\'s timeoutMs, not the deadline');
    });
  });
});
