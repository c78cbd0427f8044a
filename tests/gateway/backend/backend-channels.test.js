'use strict';

// The backend's diagnostics channels (gateway/backend/diagnostics.js) as docs/diagnostics.md lists
// them: a subscriber of every one, a real gateway on 127.0.0.1 with the real REST simulator, an
// OAuth2 API with its token endpoint (tests/helpers/real-backend.js), a handler module and a cache
// whose Redis is not there. Each channel fires with the fields its row documents, for this
// gateway; a traceparent a subscriber sets reaches the API once, in place of the route's own.

const assert = require('node:assert/strict');
const dc = require('node:diagnostics_channel');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack } = require('../../helpers/stack');
const { tmpDir } = require('../../helpers/tmp');
const { startCustomerApi, CLIENT_ID, CLIENT_SECRET } = require('../../helpers/real-backend');

const DOC = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'diagnostics.md'), 'utf8');

/** The backend's documented channels: name -> the message fields its row names ({ gateway, request, ... }). */
function documented() {
  const out = new Map();
  for (const [, name, message] of DOC.matchAll(/^\| `(ged145:(?:backend|cache):[^`]+)` \|[^|]*\| `\{ ([^}]*) \}`/gm)) {
    out.set(name, message.split(',').map((f) => f.trim()));
  }
  return out;
}

/** A port nothing listens on. */
async function closedPort() {
  const s = net.createServer();
  await new Promise((r) => { s.listen(0, '127.0.0.1', r); });
  const { port } = s.address();
  await new Promise((r) => { s.close(r); });
  return port;
}

/** Channels that fire only with a setting this scenario has not (hedging wants two origins, one slow): checked with their fields there. */
const ELSEWHERE = { 'ged145:backend:hedge': 'tests/gateway/backend/hedge.test.js' };

const REQUEST_FIELDS = ['kind', 'route', 'method', 'origin', 'template', 'path', 'attempt', 'retry', 'query', 'gateway'];

describe('backend diagnostics channels: each documented one fires with its fields, for its own gateway', function () {
  this.timeout(30_000);
  const channels = documented();
  const seen = new Map(); // name -> messages of this test's gateway
  const subscribers = [];
  let stack;
  let api;
  let client;
  const traceparents = new Map(); // route -> the traceparents the subscriber set, in order

  before(async () => {
    assert.ok(channels.size >= 11, `${channels.size} backend channels documented`);
    const dir = tmpDir('ged145-diag-');
    const handler = path.join(dir, 'careless.js');
    fs.writeFileSync(handler, "'use strict';\nmodule.exports = async () => 'no object';\n");
    for (const name of channels.keys()) {
      seen.set(name, []);
      const onMessage = (message) => {
        seen.get(name).push({ ...message }); // the token is fetched as the gateway starts: kept until it is known which is this test's

        if (name === 'ged145:backend:request:start' && message.request.kind === 'query') {
          const set = traceparents.get(message.request.route) || [];
          traceparents.set(message.request.route, set);
          set.push(`00-${String(seen.get(name).length).padStart(32, 'a')}-00f067aa0ba902b7-01`);
          message.request.setHeader('TraceParent', set.at(-1));
        }
      };
      dc.subscribe(name, onMessage);
      subscribers.push([name, onMessage]);
    }
    api = await startCustomerApi({ tokenLifetimeS: 60 });
    const apiBase = `http://127.0.0.1:${api.port}`;
    stack = await startStack({
      gateway: {
        deadlineMs: 2000,
        breaker: {
          minimumCalls: 5, failureRatio: 0.5, windowMs: 10_000, halfOpenAfterMs: 60_000, maxHalfOpenAfterMs: 60_000,
        },
        cache: { ttlMs: 60_000, store: `redis://127.0.0.1:${await closedPort()}` },
        routes: {
          cust: {
            method: 'GET',
            url: `${apiBase}/customers?phone={clid}`,
            headers: { traceparent: '00-00000000000000000000000000000001-0000000000000001-00' }, // replaced by the subscriber's
            auth: {
              type: 'oauth2', tokenUrl: `${apiBase}/oauth/token`, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, clientAuth: 'body',
            },
            response: { 'vars.1': 'customer.tier' },
          },
          careless: { module: handler },
          down: { method: 'GET', url: `http://127.0.0.1:${await closedPort()}/customers/{clid}` },
        },
      },
    });
    client = await WireClient.connect(stack.port);
    await client.open();
  });

  after(async () => {
    for (const [name, onMessage] of subscribers) dc.unsubscribe(name, onMessage);
    if (client) client.close();
    if (stack) await stack.stop();
    if (api) await api.close();
  });

  let invokeId = 100;
  async function ask(fields) {
    const id = ++invokeId;
    client.query(id, fields);
    return client.waitFor((m) => m.invokeId === id, 10_000);
  }

  it('a query, an API with OAuth2, backend errors, a circuit opening, a handler module and a cache store down: every channel, its fields', async () => {
    const first = await ask({ subtype: 'echo', clid: '5551234567' });
    assert.equal(first.type, 'QUERY_RESP', JSON.stringify(first));
    assert.equal((await ask({ subtype: 'echo', clid: '5551234567' })).type, 'QUERY_RESP'); // a cache hit
    const cust = await ask({ subtype: 'cust', clid: '5551000010' });
    assert.deepEqual([cust.type, cust.vars[1]], ['QUERY_RESP', 'gold']);
    for (let i = 0; i < 6; i++) assert.equal((await ask({ subtype: 'fail', vars: { 1: `f${i}` } })).status, STATUS.E_AG_HOST_ERROR1);
    assert.equal((await ask({ subtype: 'reset', vars: { 1: 'r' } })).status, STATUS.E_AG_HOST_ERROR1);
    assert.equal((await ask({ subtype: 'down', clid: '5551000011' })).status, STATUS.E_AG_HOST_ERROR1);
    assert.equal((await ask({ subtype: 'careless' })).status, STATUS.E_AG_HOST_ERROR1);

    for (const [name, messages] of seen) seen.set(name, messages.filter((m) => m.gateway === stack.gateway)); // not another gateway of this process
    for (const [name, fields] of channels) {
      if (Object.hasOwn(ELSEWHERE, name)) continue;
      const messages = seen.get(name);
      assert.ok(messages.length > 0, `${name} fired`);
      for (const m of messages) for (const f of fields) assert.ok(f in m && m[f] !== undefined, `${name}: ${f} in ${Object.keys(m)}`);
    }
    const starts = seen.get('ged145:backend:request:start');
    for (const { request } of starts) {
      for (const f of REQUEST_FIELDS) assert.ok(f in request && request[f] !== undefined, `request.${f}`);
      assert.equal(typeof request.setHeader, 'function');
    }
    const byKind = (kind) => starts.filter((m) => m.request.kind === kind);
    assert.equal(byKind('token').length, 1, 'one token request');
    const [token] = seen.get('ged145:backend:token');
    assert.deepEqual([token.ok, token.origin, token.error, token.expiresInMs], [true, `http://127.0.0.1:${api.port}`, null, 60_000]);
    const custStart = starts.find((m) => m.request.route === 'cust');
    assert.deepEqual(
      [custStart.request.template, custStart.request.path, custStart.request.attempt, custStart.request.retry, custStart.query.clid],
      ['/customers?phone={clid}', '/customers?phone=5551000010', 1, null, '5551000010'],
    );
    const ends = seen.get('ged145:backend:request:end');
    const result = (route) => ends.filter((m) => m.request.route === route).map((m) => `${m.statusCode} ${m.result}`);
    assert.deepEqual(result('echo'), ['200 ok'], 'the second echo was the cache\'s');
    assert.deepEqual(result('cust'), ['200 ok']);
    assert.deepEqual(result('fail'), Array(6).fill('500 http_500'));
    assert.deepEqual(ends.filter((m) => m.request.kind === 'token').map((m) => `${m.statusCode} ${m.result}`), ['200 ok']);
    assert.equal(seen.get('ged145:backend:request:headers').length, ends.length, 'headers before each end');
    const errors = seen.get('ged145:backend:request:error').map((m) => `${m.request.route} ${m.reason}`);
    assert.deepEqual(errors.sort(), ['down unreachable', 'reset reset']);
    assert.deepEqual(seen.get('ged145:backend:request:reconnect').map((m) => m.request.route), ['reset'], 'sent again once after its reused connection broke');
    const circuit = seen.get('ged145:backend:circuit').map((m) => `${m.route} ${m.from}->${m.to}`);
    assert.deepEqual(circuit, ['fail closed->open']);
    const failures = seen.get('ged145:backend:failure').map((m) => m.reason).sort();
    assert.deepEqual(failures, ['bad_answer', ...Array(6).fill('http_500'), 'reset', 'unreachable']);
    assert.deepEqual(seen.get('ged145:backend:handler-error').map((m) => `${m.route} ${m.kind}`), ['careless bad_answer']);
    const lookups = seen.get('ged145:cache:lookup').filter((m) => m.query.subtype === 'echo').map((m) => m.result);
    assert.deepEqual(lookups, ['miss', 'hit']);
    assert.ok(seen.get('ged145:cache:store-error').every((m) => m.what === 'connection'));
  });

  it('a subscriber\'s setHeader(\'traceparent\') reaches the API once, in place of the route\'s own', () => {
    const sent = api.lookupHeaders.map((h) => h.traceparent); // Node joins a header sent twice with ', '
    assert.equal(sent.length, 1);
    assert.deepEqual(sent, traceparents.get('cust'));
    assert.match(sent[0], /^00-a*\d+-00f067aa0ba902b7-01$/);
  });
});
