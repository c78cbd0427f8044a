'use strict';

// Loaded with --require into a gateway or a bare proxy by bench/critical-path.js, never by the
// product. With one query in flight at a time, it stamps the moments a query passes on the
// gateway's side of a round trip: the router's bytes in, each step to the backend request written,
// the backend's bytes in, each step to the reply written. At exit it writes the medians of the gaps
// between them to stderr, one line: `critical-path {json}`. The steps inside the gateway are found
// by wrapping its prototypes (CRITICAL_PATH_ROOT: the checkout whose modules the process loads); a
// build without one of them has no figure for that step, never a wrong one.

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const ROOT = process.env.CRITICAL_PATH_ROOT || path.join(__dirname, '..');
const KEEP = 100_000; // samples per step: the last ones count
// CRITICAL_PATH_TAILS=1: also from each write to the loop's next check phase (setImmediate), the
// write's syscall and the work after it; the probe's own setImmediate then adds to both.
const TAILS = process.env.CRITICAL_PATH_TAILS === '1';

const now = () => performance.now();
let at = {}; // step -> when the query in flight passed it
const gaps = new Map(); // "from>to" -> Float64Array ring
const counts = new Map();
const routers = new WeakSet();

function gap(from, to, t) {
  const t0 = at[from];
  if (t0 === undefined) return;
  const key = `${from}>${to}`;
  let ring = gaps.get(key);
  if (ring === undefined) {
    ring = new Float64Array(KEEP);
    gaps.set(key, ring);
    counts.set(key, 0);
  }
  const n = counts.get(key);
  ring[n % KEEP] = t - t0;
  counts.set(key, n + 1);
}

function pass(step, from) {
  const t = now();
  gap(from, step, t);
  at[step] = t;
}

// A router's connection is one the process accepted; the backend's, a TCP one it opened (its
// stdout and stderr are sockets too, without a peer port). Nothing else may connect during a run:
// an admin-port request would count as a router's and start the figures again.
const fromRouter = (socket) => Boolean(socket._server);
const toBackend = (socket) => !socket._server && typeof socket.remotePort === 'number';

const { push } = net.Socket.prototype;
net.Socket.prototype.push = function stampedPush(chunk, encoding) {
  if (chunk !== null) {
    if (fromRouter(this)) {
      if (!routers.has(this)) {
        // A new router connection: the figures start again (the gateway's warm-up and an earlier client's queries do not count).
        routers.add(this);
        gaps.clear();
        counts.clear();
      }
      at = { in: now() };
    } else if (at['answer in'] === undefined && toBackend(this)) {
      pass('answer in', 'request written'); // its first chunk: an answer may come in more than one
    }
  }
  return push.call(this, chunk, encoding);
};

function written(socket) {
  if (!fromRouter(socket) && !toBackend(socket)) return; // a log line
  if (fromRouter(socket)) {
    const t = now();
    gap('answer in', 'reply written', t);
    gap('answer parsed', 'reply written', t);
    gap('reply built', 'reply written', t);
    if (TAILS) {
      at['reply written'] = t;
      setImmediate(() => gap('reply written', 'loop turned', now()));
    }
  } else {
    const t = now();
    gap('in', 'request written', t);
    gap('engine', 'request written', t);
    at['request written'] = t;
    if (TAILS) setImmediate(() => gap('request written', 'loop turned', now()));
  }
}
// Every write passes here once: Socket's _writev hands its chunks to _writeGeneric too.
const { _writeGeneric: writeGeneric } = net.Socket.prototype;
net.Socket.prototype._writeGeneric = function stampedWrite(...args) {
  written(this);
  return writeGeneric.apply(this, args);
};

/** Wraps Class.prototype[method] of the module at file (below ROOT), if it has one. */
function wrap(file, name, method, around) {
  let Class;
  try {
    Class = require(path.join(ROOT, file))[name];
  } catch {
    return;
  }
  if (Class === undefined || typeof Class.prototype[method] !== 'function') return;
  const original = Class.prototype[method];
  Class.prototype[method] = function wrapped(...args) {
    return around.call(this, original, args);
  };
}

wrap('gateway/session/session-queries.js', 'SessionQueries', 'dispatch', function dispatch(original, args) {
  pass('dispatched', 'in');
  return original.apply(this, args);
});
wrap('gateway/backend/handle.js', 'QueryHandle', 'start', function start(original, args) {
  pass('started', 'dispatched');
  return original.apply(this, args);
});
wrap('gateway/backend/engines/undici.js', 'Engine', 'request', function request(original, args) {
  const t = now();
  gap('in', 'engine', t);
  gap('started', 'engine', t);
  at.engine = t;
  const answer = original.apply(this, args);
  // The first reaction on the engine's promise: where the layers above begin.
  answer.then(() => pass('answer parsed', 'answer in'), () => {});
  return answer;
});
wrap('gateway/backend/handle.js', 'QueryHandle', 'finish', function finish(original, args) {
  pass('outcome', 'answer parsed');
  return original.apply(this, args);
});
wrap('gateway/session/reply.js', 'Replies', 'forOutcome', function forOutcome(original, args) {
  const reply = original.apply(this, args);
  pass('reply built', 'outcome');
  return reply;
});

process.on('exit', () => {
  const medians = {};
  for (const [key, ring] of gaps) {
    const n = Math.min(counts.get(key), KEEP);
    const sorted = ring.slice(0, n).sort();
    medians[key] = sorted[Math.floor(n / 2)] * 1000; // microseconds
  }
  fs.writeSync(2, `critical-path ${JSON.stringify({ medians, queries: counts.get('in>request written') || 0 })}\n`);
});
