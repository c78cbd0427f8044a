'use strict';

// undici's public entry, not lib/dispatcher/pool: an internal path under a caret range may move in
// any minor release. The index also loads fetch, WebSocket and the mock agents we never use; that
// costs about 4 MB of RSS and 90 ms of start (docs/performance.md), once, for a path that cannot break.
const { performance } = require('node:perf_hooks');
const { Pool } = require('undici');
const { reasonOf, EngineError } = require('./errors');

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
 */
class Engine {
  constructor({ connections = 64, maxResponseBytes = 64 * 1024, keepAliveTimeout = 30_000 } = {}) {
    this.name = 'undici';
    this.options = { connections, maxResponseSize: maxResponseBytes, keepAliveTimeout, pipelining: 1 };
    this.origins = new Map();
  }

  origin(origin) {
    let o = this.origins.get(origin);
    if (o === undefined) {
      o = new Origin(new Pool(origin, this.options));
      this.origins.set(origin, o);
    }
    return o;
  }

  request({ origin, path, method, headers, body, signal }) {
    return new Promise((resolve, reject) => {
      const handler = new Collect(signal, resolve, reject, {
        path, method, headers, body,
      });
      if (signal && signal.aborted) {
        handler.onResponseError(null, signal.reason);
        return;
      }
      try {
        this.origin(origin).dispatch(handler);
      } catch (err) {
        handler.onResponseError(null, err); // an invalid origin: new Pool() throws
      }
    });
  }

  async close() {
    await Promise.all([...this.origins.values()].map((o) => o.pool.destroy()));
    this.origins.clear();
  }
}

/** One origin's pool and the requests waiting for one of its connections, oldest first. */
class Origin {
  constructor(pool) {
    this.pool = pool;
    this.full = false; // pool.dispatch said every connection is taken; 'drain' says one is free
    this.waiting = [];
    this.head = 0;
    pool.on('drain', () => this.drain());
  }

  dispatch(handler) {
    if (this.full) this.waiting.push(handler);
    else this.full = !this.pool.dispatch(handler.opts, handler);
  }

  drain() {
    this.full = false;
    const { waiting } = this;
    while (!this.full && this.head < waiting.length) {
      const handler = waiting[this.head];
      waiting[this.head++] = undefined;
      if (!handler.settled) this.full = !this.pool.dispatch(handler.opts, handler);
    }
    if (this.head === waiting.length) {
      waiting.length = 0;
      this.head = 0;
    }
  }
}

/**
 * One request's undici handler: settles the promise once with {status, text} or an EngineError.
 * It is also the signal's abort listener (handleEvent). An abort while the request still waits
 * for a free connection settles it at once; the Origin never dispatches it.
 */
class Collect {
  constructor(signal, resolve, reject, opts) {
    this.opts = opts;
    this.signal = signal;
    this.resolve = resolve;
    this.reject = reject;
    this.controller = null;
    this.sentAt = -1; // when undici wrote the request to a connection
    this.status = 0;
    this.chunks = [];
    this.settled = false;
    if (signal) signal.addEventListener('abort', this);
  }

  handleEvent() {
    if (this.controller !== null) this.controller.abort(this.signal.reason);
    else this.onResponseError(null, this.signal.reason);
  }

  onRequestStart(controller) {
    this.controller = controller;
    this.sentAt = performance.now();
    if (this.signal && this.signal.aborted) controller.abort(this.signal.reason);
  }

  onResponseStart(controller, statusCode) {
    this.status = statusCode;
  }

  onResponseData(controller, chunk) {
    this.chunks.push(chunk);
  }

  onResponseEnd() {
    if (!this.finish()) return;
    const { chunks } = this;
    const text = chunks.length === 1 ? chunks[0].toString() : Buffer.concat(chunks).toString();
    this.resolve({ status: this.status, text });
  }

  onResponseError(controller, err) {
    if (!this.finish()) return;
    const onWireMs = this.sentAt < 0 ? -1 : performance.now() - this.sentAt;
    this.reject(new EngineError(reasonOf(err, this.signal), err, onWireMs, this.signal));
  }

  finish() {
    if (this.settled) return false;
    this.settled = true;
    if (this.signal) this.signal.removeEventListener('abort', this);
    return true;
  }
}

module.exports = { Engine };
