'use strict';

// Pool alone, not require('undici'): the package index also loads fetch, WebSocket, EventSource, the
// cache and mock agents, which the gateway never uses: about 4 MB of its RSS (docs/performance.md).
const Pool = require('undici/lib/dispatcher/pool');
const { reasonOf, EngineError } = require('./errors');

/**
 * undici: one keep-alive Pool per backend origin, bounded response size. Requests go through
 * Pool.dispatch with a handler that collects the body, not through pool.request(): the answer is
 * a few hundred bytes read whole, so a Readable body stream, an AsyncResource and body.text()'s
 * consumer per query are allocation the query path does not need.
 */
class Engine {
  constructor({ connections = 64, maxResponseBytes = 64 * 1024, keepAliveTimeout = 30_000 } = {}) {
    this.name = 'undici';
    this.options = { connections, maxResponseSize: maxResponseBytes, keepAliveTimeout, pipelining: 1 };
    this.pools = new Map();
  }

  pool(origin) {
    let p = this.pools.get(origin);
    if (p === undefined) {
      p = new Pool(origin, this.options);
      this.pools.set(origin, p);
    }
    return p;
  }

  request({ origin, path, method, headers, body, signal }) {
    return new Promise((resolve, reject) => {
      const handler = new Collect(signal, resolve, reject);
      if (signal && signal.aborted) {
        handler.onResponseError(null, signal.reason);
        return;
      }
      try {
        this.pool(origin).dispatch({ path, method, headers, body }, handler);
      } catch (err) {
        handler.onResponseError(null, err); // an invalid origin: new Pool() throws
      }
    });
  }

  async close() {
    await Promise.all([...this.pools.values()].map((p) => p.destroy()));
    this.pools.clear();
  }
}

/**
 * One request's undici handler: settles the promise once with {status, text} or an EngineError.
 * It is also the signal's abort listener (handleEvent). An abort while the request still waits
 * for a free connection settles it at once; undici drops it when its turn comes.
 */
class Collect {
  constructor(signal, resolve, reject) {
    this.signal = signal;
    this.resolve = resolve;
    this.reject = reject;
    this.controller = null;
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
    if (this.finish()) this.reject(new EngineError(reasonOf(err, this.signal), err));
  }

  finish() {
    if (this.settled) return false;
    this.settled = true;
    if (this.signal) this.signal.removeEventListener('abort', this);
    return true;
  }
}

module.exports = { Engine };
