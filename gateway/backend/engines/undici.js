'use strict';

const { performance } = require('node:perf_hooks');
const Pool = require('./undici-parts').load('Pool'); // without undici's index (undici-parts.js)
const { proxyFor, tunnelConnector, proxyAuthorization } = require('./proxy');
const { HostNames } = require('./dns');
const { failureReason, EngineError } = require('../errors');
const { codingOf, Decoding, textOf } = require('./content-encoding');
const { REASON } = require('../outcome');

/**
 * undici: one keep-alive Pool per backend origin, bounded response size. Requests go through
 * Pool.dispatch with a handler that collects the body, not through pool.request(): the answer is
 * a few hundred bytes read whole, so a Readable body stream, an AsyncResource and body.text()'s
 * consumer per query are allocation the query path does not need.
 *
 * When every connection is busy, requests wait here, not in undici's queue: undici cannot drop a
 * queued request without destroying the connection it is handed to (its abort closes the socket),
 * so a burst whose tail missed its deadline would tear down the pool just when it is needed.
 * A request aborted while it waits here is settled at once and never dispatched.
 *
 * A compressed answer (Content-Encoding gzip, deflate or br) is decoded as it arrives, with
 * maxResponseBytes applied to the decoded size (content-encoding.js); undici's own limit still
 * applies to the bytes as sent. An answer without Content-Encoding costs one header lookup more.
 */
class Engine {
  /**
   * tls: connect options for every https origin ({ca, cert, key, servername}), or null; proxy:
   * compiled forward-proxy settings (config/backend.js), or null.
   */
  constructor({
    connections, maxResponseBytes, keepAliveTimeout, tls = null, proxy = null,
  }) {
    this.name = 'undici';
    // A server's "Keep-Alive: timeout=N" is honoured less KEEP_ALIVE_MARGIN_MS, the time our
    // request may take to reach it; without one, a connection idle for keepAliveTimeout is closed.
    this.options = {
      connections, maxResponseSize: maxResponseBytes, keepAliveTimeout, keepAliveTimeoutThreshold: KEEP_ALIVE_MARGIN_MS, pipelining: 1,
    };
    this.maxResponseBytes = maxResponseBytes;
    this.tls = tls;
    this.proxy = proxy;
    this.names = new HostNames(); // DNS with a time limit and a cache (dns.js)
    this.origins = new Map();
  }

  origin(origin) {
    let o = this.origins.get(origin);
    if (o === undefined) {
      o = this.makeOrigin(origin);
      this.origins.set(origin, o);
    }
    return o;
  }

  /** The pool for an origin: direct, through a CONNECT tunnel (https), or to the proxy in absolute form (http). */
  makeOrigin(origin) {
    const via = proxyFor(this.proxy, origin);
    const { lookup } = this.names;
    const connect = this.tls === null ? { lookup } : { ...this.tls, lookup };
    if (via === null) return new Origin(new Pool(origin, { ...this.options, connect }), null);
    if (origin.startsWith('https:')) return new Origin(new Pool(origin, { ...this.options, connect: tunnelConnector(via, connect) }), null);
    const proxy = new URL(via);
    const auth = proxyAuthorization(proxy);
    return new Origin(new Pool(proxy.origin, { ...this.options, connect: { lookup } }), { origin, host: new URL(origin).host, auth });
  }

  /**
   * group: whose request it is (a router session); waiting requests are sent round robin between
   * groups (Origin). observer: told of its headers and of a send again (engines/index.js), or null.
   */
  request(request, observer = null) {
    const {
      origin, path, method, body, signal, idempotent = true, group,
    } = request;
    const headers = observer === null ? request.headers : observer.requestHeaders;
    return new Promise((resolve, reject) => {
      let o;
      try {
        o = this.origin(origin);
      } catch (err) {
        reject(new EngineError(failureReason(err, signal), err, -1, signal)); // an invalid origin: new Pool() throws
        return;
      }
      // A signal bounds the request (engines/index.js): undici's own headers and body timers, 300 s,
      // would never fire first, and each costs a timer object that lives until undici's next
      // half-second tick, long enough to be promoted and wait for a full collection. 0: none;
      // undefined: undici's.
      const timeout = signal ? 0 : undefined;
      const opts = o.absolute === null ? {
        path, method, headers, body, headersTimeout: timeout, bodyTimeout: timeout,
      } : o.absolute.opts(path, method, headers, body, timeout);
      const handler = new Collect(signal, resolve, reject, opts, idempotent ? o : null, observer, group, this.maxResponseBytes);
      if (signal && signal.aborted) {
        handler.onResponseError(null, signal.reason);
        return;
      }
      o.dispatch(handler);
    });
  }

  async close() {
    await Promise.all([...this.origins.values()].map((o) => o.pool.destroy()));
    this.origins.clear();
  }
}

/** Below a server's Keep-Alive: timeout=, so that we close an idle connection before it does. */
const KEEP_ALIVE_MARGIN_MS = 1000;

/**
 * Errors of a connection that broke before any byte of the answer arrived: the server (or a proxy,
 * a load balancer) closed a reused keep-alive connection just as the request went out. The request
 * is sent again once, on another connection: the backend never saw it.
 */
const BROKEN = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);
const brokenConnection = (err) => err !== null && err !== undefined && (BROKEN.has(err.code) || (err.cause !== undefined && BROKEN.has(err.cause.code)));

/** An http origin reached through a proxy: requests in absolute form, with the origin's Host. */
class AbsoluteForm {
  constructor({ origin, host, auth }) {
    this.origin = origin;
    this.host = host;
    this.auth = auth;
  }

  opts(path, method, headers, body, timeout) {
    const h = { ...headers, host: this.host };
    if (this.auth !== undefined) h['proxy-authorization'] = this.auth;
    return {
      path: this.origin + path, method, headers: h, body, headersTimeout: timeout, bodyTimeout: timeout,
    };
  }
}

/**
 * One origin's pool and the requests waiting for one of its connections. They wait in one queue
 * per group (a router session), and a connection that frees up takes the oldest request of the
 * next group in turn: one session's burst of thousands cannot make another session's queries
 * wait behind it (side B's 100 queries/s kept their latency while side A sent bursts of
 * 3,000 to a 50 ms backend; docs/reliability.md).
 */
class Origin {
  constructor(pool, absolute) {
    this.pool = pool;
    this.absolute = absolute === null ? null : new AbsoluteForm(absolute);
    this.full = false; // pool.dispatch said every connection is taken; 'drain' says one is free
    this.queues = new Map(); // group -> {items, head}: its waiting requests, oldest first
    this.turns = []; // the groups with requests waiting, in turn
    this.turn = 0;
    this.waiting = 0;
    pool.on('drain', () => this.drain());
  }

  dispatch(handler) {
    if (this.full || this.waiting > 0) this.enqueue(handler);
    else this.full = !this.pool.dispatch(handler.opts, handler);
  }

  enqueue(handler) {
    let q = this.queues.get(handler.group);
    if (q === undefined) {
      q = { items: [], head: 0 };
      this.queues.set(handler.group, q);
      this.turns.push(handler.group);
    }
    q.items.push(handler);
    this.waiting++;
  }

  /** The next waiting request, round robin between groups; null when none waits. */
  next() {
    while (this.turns.length > 0) {
      if (this.turn >= this.turns.length) this.turn = 0;
      const group = this.turns[this.turn];
      const q = this.queues.get(group);
      const handler = q.items[q.head];
      q.items[q.head++] = undefined;
      this.waiting--;
      if (q.head === q.items.length) {
        this.queues.delete(group);
        this.turns.splice(this.turn, 1); // the next group now stands at this.turn
      } else {
        this.turn++;
      }
      if (!handler.settled) return handler; // one aborted while it waited is dropped here
    }
    return null;
  }

  drain() {
    this.full = false;
    while (!this.full) {
      const handler = this.next();
      if (handler === null) return;
      this.full = !this.pool.dispatch(handler.opts, handler);
    }
  }
}

/**
 * One request's undici handler: settles the promise once with {status, text, retryAfter} or an EngineError.
 * It is also the signal's abort listener (handleEvent). An abort while the request still waits
 * for a free connection settles it at once; the Origin never dispatches it.
 */
class Collect {
  /**
   * origin: where to send it again if its connection breaks before an answer (null: never, the
   * route is not idempotent); observer: told of the headers and of a send again, or null;
   * group: whose request it is (Origin's fair share).
   */
  constructor(signal, resolve, reject, opts, origin, observer, group, maxBytes) {
    this.opts = opts;
    this.origin = origin;
    this.observer = observer;
    this.signal = signal;
    this.resolve = resolve;
    this.reject = reject;
    this.controller = null;
    this.sentAt = -1; // when undici wrote the request to a connection
    this.status = 0;
    this.retryAfter = undefined; // a 429's or 503's Retry-After (pace.js)
    this.chunks = [];
    this.settled = false;
    this.group = group;
    this.maxBytes = maxBytes;
    this.decoding = null; // a Decoding while a compressed answer is read and decoded
    this.ended = false; // the last byte arrived while its decoding goes on
    if (signal) signal.addEventListener('abort', this);
  }

  handleEvent() {
    // Once the answer is in, only its decoding may still be running: undici has nothing to abort.
    if (this.controller !== null && !this.ended) this.controller.abort(this.signal.reason);
    else this.onResponseError(null, this.signal.reason);
  }

  onRequestStart(controller) {
    this.controller = controller;
    this.sentAt = performance.now();
    if (this.signal && this.signal.aborted) controller.abort(this.signal.reason);
  }

  onResponseStart(controller, statusCode, headers) {
    this.status = statusCode;
    if (this.observer !== null) this.observer.headers(statusCode);
    if ((statusCode === 429 || statusCode === 503) && headers) this.retryAfter = headers['retry-after'];
    const encoding = headers['content-encoding'];
    if (encoding !== undefined) this.decode(controller, encoding);
  }

  /** The answer is compressed: its chunks go through a Decoding, which settles the request. */
  decode(controller, encoding) {
    const coding = codingOf(encoding);
    if (coding === null) return;
    if (coding instanceof Error) {
      if (this.finish()) {
        const failure = new EngineError(REASON.ERROR, coding, performance.now() - this.sentAt, this.signal);
        failure.detail = coding.message; // no code of its own: its words are the detail
        this.reject(failure);
      }
      controller.abort(coding); // nothing more of it is read
      return;
    }
    this.decoding = new Decoding(coding, this.maxBytes, (err, body) => {
      if (err === null) {
        if (this.finish()) this.resolve(answer(this.status, textOf(body), this.retryAfter));
        return;
      }
      this.fail(err);
      if (!this.ended) controller.abort(err); // too large or corrupt: the rest is not read
    });
  }

  onResponseData(controller, chunk) {
    if (this.decoding === null) this.chunks.push(chunk);
    else this.decoding.write(chunk);
  }

  onResponseEnd() {
    if (this.decoding !== null) {
      this.ended = true;
      this.decoding.end();
      return;
    }
    if (!this.finish()) return;
    const { chunks } = this;
    this.resolve(answer(this.status, textOf(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)), this.retryAfter));
  }

  onResponseError(controller, err) {
    if (this.origin !== null && this.status === 0 && !this.settled && brokenConnection(err) && !(this.signal && this.signal.aborted)) {
      const { origin } = this;
      this.origin = null; // once
      this.controller = null;
      this.sentAt = -1;
      if (this.observer !== null) this.observer.reconnect();
      origin.dispatch(this);
      return;
    }
    this.fail(err);
  }

  fail(err) {
    if (!this.finish()) return;
    const onWireMs = this.sentAt < 0 ? -1 : performance.now() - this.sentAt;
    this.reject(new EngineError(failureReason(err, this.signal), err, onWireMs, this.signal));
  }

  finish() {
    if (this.settled) return false;
    this.settled = true;
    if (this.signal) this.signal.removeEventListener('abort', this);
    if (this.decoding !== null) this.decoding.destroy();
    return true;
  }
}

/** An engine's answer: {status, text}, and retryAfter only when a 429 or 503 carried one. */
const answer = (status, text, retryAfter) => (retryAfter === undefined ? { status, text } : { status, text, retryAfter });

module.exports = { Engine };
