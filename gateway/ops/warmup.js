'use strict';

// Warm-up before the listener opens: a cold Node process answers its first few hundred queries
// 100-200 ms late (JIT, lazy loading, undici's HTTP parser compiled on first use), long enough to
// miss the router's deadline right after a restart. So the gateway first runs synthetic queries
// through the same code (codec, backend engine, answer mapping, metrics) against a throwaway
// loopback HTTP server, never the real backend. Then bursts of BURST queries in one write go
// through a real Session over a loopback socket: a router's first burst otherwise ran the session,
// the link's slices and the engine's queue for busy connections cold, at several times their warm
// cost, and a quarter of a first burst of 500 missed its deadline (docs/reliability.md).

const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const { MessageReader, DIRECTION } = require('../../lib/protocol');
const { KIND } = require('../backend/outcome');
const { ReplyWriter } = require('../answer/writer');
const { Metrics } = require('./metrics');
const { attachMetrics } = require('./attach');
const { createLogger } = require('../../lib/logger');
const { compile } = require('../config');
const { Gateway } = require('../server');

// Ten bursts of 500 rather than four of 400: the first router burst then cost the gateway 207 ms
// of CPU instead of 240 (three runs each), for 0.6 s more of start (2.3 s in all).
const BURST = 500;
const BURSTS = 10;
const FIRST_ROUND = { queries: 200, bursts: 1 };

// Answers and queries of a few shapes, in turn: JSON.parse gives each key set its own hidden class,
// and code that saw one shape only is thrown away at the first other one, in the router's first burst.
const ANSWERS = [
  { vars: { 1: 'warm' } },
  { vars: { 1: 'warm', 2: 'up' }, ecc: { 'user.warm': '1' } },
  { vars: { 1: 'warm', 2: 'up' }, ecc: { 'user.warm': '1' }, eccArrays: [{ name: 'user.w', index: 0, value: 'x' }] },
  { ced: '1234' },
].map((a) => JSON.stringify(a));
const QUERIES = [
  { routerCallDay: 1, subtype: 'warmup', vars: { 1: 'a' } },
  {
    routerCallDay: 1, subtype: 'warmup', ced: '1#', dn: '8000000000', vars: { 1: 'a' }, ecc: { 'user.a': 'b' },
  },
  { routerCallDay: 1, subtype: 'other', dn: '8000000000' },
];
// A CLID of its own per query: with the answer cache on, repeated keys would answer from it and
// leave the backend path cold.
const queryReq = (serialize, id) => serialize.queryReq({
  ...QUERIES[id % QUERIES.length], invokeId: id, routerCallKey: id, clid: `555${String(id).padStart(7, '0')}`,
}, { nul: true });
/** A burst that gets no reply for this long ends the warm-up: it is help for the start, never a reason not to listen. */
const STALL_MS = 10_000;

/**
 * The gateway's settings pointed at the warm-up's loopback server, compiled the way the gateway's
 * own were (compile), so the warm-up runs the same code on objects of the same shapes: the
 * breaker and retry as configured (on by default), the cache when one is configured, but in memory
 * (never the configured Redis) and empty. Nothing it needs from outside: no routes (their handler
 * modules), no allowlist, no TLS, no DES (its session is plain even where des.require is set).
 */
function warmConfig(config, url) {
  const settings = {};
  for (const key of Object.keys(config)) {
    if (key !== 'compiledRoutes' && key !== 'baseDir' && key !== 'configFile') settings[key] = config[key];
  }
  Object.assign(settings, {
    // Plain HTTP to its own loopback server: no credentials, TLS, proxy or header secrets.
    backend: {
      ...config.backend, url, headers: {}, auth: null, proxy: null, tls: {
        ca: null, cert: null, key: null, servername: null,
      },
    },
    routes: {},
    cache: config.cache ? { ...config.cache, store: null } : config.cache,
    allowlist: [],
    des: { ...config.des, keyFile: null, require: false },
    tls: { cert: null, key: null, ca: null },
    limits: { ...config.limits, maxSessions: 1 },
    log: { ...config.log, traceFrames: 0 },
    warmup: false, // registered by whoever starts a gateway (register below), never by this one
  });
  const warm = compile(settings, { baseDir: config.baseDir, env: {} });
  warm.configFile = null;
  return warm;
}

/**
 * Registers the warm-up on a gateway about to start (Gateway#beforeListen), from where a gateway
 * is started (gateway/index.js, a cluster worker): help for the first queries, never a reason not
 * to listen, so a failure is a warning.
 */
function register(gateway) {
  gateway.beforeListen(async () => {
    try {
      const ms = await module.exports.warmUp(gateway.config); // the exported one: a test makes it fail
      gateway.log.info(`warmed up in ${Math.round(ms)} ms`);
    } catch (err) {
      gateway.log.warn(`warm-up stopped: ${err.message}; listening without it (the first queries may be slower)`);
    }
  });
}

/**
 * Two rounds, a short one first. The end of a round (sockets destroyed, the pool and listeners
 * closed) is the first time those objects' fields hold null and other shapes, and V8 then throws
 * away the optimized code that relied on their old types: after a single round, the router's first
 * burst recompiled some 30 hot functions, on the cores it needed, and cost the gateway 240-250 ms of
 * CPU instead of 140 (docs/reliability.md). The short round takes that hit; the full round's code
 * survives its own end.
 */
async function warmUp(config) {
  const started = performance.now();
  await round(config, FIRST_ROUND);
  await round(config, { queries: 2000, bursts: BURSTS });
  return performance.now() - started;
}

async function round(config, { queries, bursts: burstCount, concurrency = 32 }) {
  let answered = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(ANSWERS[answered++ % ANSWERS.length]);
    });
  });
  // exclusive: in a cluster worker this private server must not go through the primary.
  await new Promise((r) => server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, r));
  const gateway = warmGateway(config, `http://127.0.0.1:${server.address().port}`);
  const metrics = new Metrics({ collectDefault: false });
  const observed = attachMetrics(gateway, metrics); // its own figures, never the served gateway's
  // The direct queries use the bursts' own backend; both ends speak the gateway's numbering (config `protocol`).
  const { backend, profile, serialize } = gateway;
  const reply = new ReplyWriter({ maxBody: config.limits.maxMessageLength, serialize }); // the session's own reply path
  let next = 0;
  const one = async (q) => {
    const t0 = performance.now();
    const outcome = await new Promise((onOutcome) => { backend.dispatch(q, Infinity, 0, { onOutcome }); }); // as a session dispatches
    if (outcome.kind === KIND.OK) reply.queryResp(q, outcome.answer, config.answers);
    metrics.observeQuery(q.subtype, 'ok', (performance.now() - t0) / 1000); // seconds, as the session records them
  };
  const pending = [];
  const reader = new MessageReader({
    direction: DIRECTION.ROUTER_TO_HOST, profile, onMessage: (q) => pending.push(q), onError: () => {},
  });
  const worker = async () => {
    while (next < queries) {
      const id = ++next;
      reader.push(queryReq(serialize, id));
      await one(pending.shift());
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
    await bursts(gateway, burstCount);
  } finally {
    await gateway.shutdown('warm-up over'); // its listener, its sessions, its backend pool
    observed.detach();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

/**
 * A Gateway of its own, not an object that looks like one, against the loopback server at url:
 * code the warm-up optimizes for the gateway, its metrics and its logger then meets the same
 * hidden classes in the router's first burst. Silent: it logs errors only, and nowhere.
 */
function warmGateway(config, url) {
  return new Gateway(warmConfig(config, url), {
    log: createLogger({ component: 'gateway', level: 'error', console: false }),
  });
}

/** count bursts of BURST queries in one write, through the warm gateway on a loopback port of its own. */
async function bursts(gateway, count) {
  const { profile, serialize } = gateway;
  // exclusive: in a cluster worker, a port of this process's own, not one shared through the primary.
  const port = await gateway.listen({ port: 0, host: '127.0.0.1', exclusive: true });
  const client = net.connect(port, '127.0.0.1');
  let waiting = null;
  const fail = (err) => {
    if (waiting === null) return;
    clearTimeout(waiting.timer);
    waiting.reject(err);
    waiting = null;
  };
  client.on('error', fail);
  client.on('close', () => fail(new Error('its session was closed')));
  try {
    await once(client, 'connect');
    let replies = 0;
    let opened = null;
    const reader = new MessageReader({
      profile,
      direction: DIRECTION.HOST_TO_ROUTER,
      onMessage: (msg) => {
        if (opened === null) opened = msg;
        replies++;
        if (waiting !== null && replies >= waiting.n) {
          clearTimeout(waiting.timer);
          waiting.resolve();
          waiting = null;
        }
      },
      onError: fail,
    });
    client.on('data', (chunk) => reader.push(chunk));
    const until = (n) => new Promise((resolve, reject) => {
      if (replies >= n) resolve();
      else waiting = { n, resolve, reject, timer: setTimeout(() => fail(new Error(`no reply for ${STALL_MS} ms`)), STALL_MS) };
    });
    client.write(serialize.openReq({ invokeId: 1, version: gateway.config.protocol.versions[0], idleTimeoutMs: 0, config: 'warmup' }, { nul: true }));
    await until(1);
    if (opened.type !== 'OPEN_CONF') throw new Error(`its session was refused (${opened.statusName || opened.type}${opened.error ? `: ${opened.error}` : ''})`);
    let id = 1;
    for (let b = 0; b < count; b++) {
      const frames = [];
      for (let i = 0; i < BURST; i++) {
        id++;
        frames.push(queryReq(serialize, id));
      }
      frames.push(serialize.heartbeatReq(++id));
      client.write(Buffer.concat(frames));
      await until(id);
    }
  } finally {
    client.destroy();
  }
}

module.exports = { warmUp, register };
