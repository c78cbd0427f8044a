'use strict';

// Warm-up before the listener opens: a cold Node process answers its first few hundred queries
// 100-200 ms late (JIT, lazy loading, undici's HTTP parser compiled on first use), long enough to
// miss the router's deadline right after a restart. So the gateway first runs synthetic queries
// through the same code (codec, backend engine, answer mapping, metrics) against a throwaway
// loopback HTTP server, never the real backend.

const http = require('node:http');
const { MessageReader, serialize, DIRECTION } = require('../lib/protocol');
const { Backend } = require('./backend');
const { QuerySignal } = require('./abort');
const { ReplyWriter } = require('./reply');
const { Metrics } = require('./metrics');

const ANSWER = JSON.stringify({ vars: { 1: 'warm', 2: 'up' }, ecc: { 'user.warm': '1' }, eccArrays: [{ name: 'user.w', index: 0, value: 'x' }] });
const QUERY = {
  routerCallDay: 1, subtype: 'warmup', clid: '5550000000', ced: '1#', dn: '8000000000', vars: { 1: 'a' }, ecc: { 'user.a': 'b' },
};

async function warmUp(config, { queries = 2000, concurrency = 32 } = {}) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(ANSWER));
  });
  // exclusive: in a cluster worker this private server must not go through the primary.
  await new Promise((r) => server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, r));
  const backend = new Backend({ ...config, compiledRoutes: new Map(), backend: { ...config.backend, url: `http://127.0.0.1:${server.address().port}` } });
  const metrics = new Metrics({ collectDefault: false });
  const reply = new ReplyWriter({ maxBody: config.limits.maxMessageLength }); // the session's own reply path
  const started = performance.now();
  let next = 0;
  const one = async (q) => {
    const t0 = performance.now();
    const outcome = await backend.call(q, new QuerySignal()); // the signal a session gives
    if (outcome.kind === 'ok') reply.queryResp(q, outcome.answer);
    metrics.observeQuery(q.subtype, 'ok', (performance.now() - t0) / 1000); // seconds, as the session records them
  };
  const pending = [];
  const reader = new MessageReader({ direction: DIRECTION.ROUTER_TO_HOST, onMessage: (q) => pending.push(q), onError: () => {} });
  const worker = async () => {
    while (next < queries) {
      const id = ++next;
      reader.push(serialize.queryReq({ ...QUERY, invokeId: id, routerCallKey: id }, { nul: true }));
      await one(pending.shift());
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await backend.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  return performance.now() - started;
}

module.exports = { warmUp };
