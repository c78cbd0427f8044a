'use strict';

const http = require('node:http');
const { performance } = require('node:perf_hooks');
const https = require('node:https');
const axios = require('axios');
const { failureReason, EngineError } = require('../errors');
const { asAbortSignal } = require('../abort');
const { codingOf, undecodable } = require('./content-encoding');
const { REASON } = require('../outcome');

/**
 * axios over keep-alive agents; the body is read as text, at most maxResponseBytes. tls: the
 * backend's secure context and servername (config/backend.js), for every https origin. No proxy:
 * the config refuses backend.proxy with this engine, and the proxy environment is not read.
 * axios decodes gzip, deflate and br itself, as a stream, and counts maxContentLength on the
 * decoded bytes (a zip bomb ends as too_large); it leaves Content-Encoding in place only for a
 * coding it cannot decode, which fails here as the undici engine fails it.
 */
class Engine {
  constructor({
    connections, maxResponseBytes, keepAliveTimeout, tls = null,
  }) {
    this.name = 'axios';
    // Node's agents close a free socket after `timeout` of idleness.
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: connections, timeout: keepAliveTimeout });
    this.httpsAgent = new https.Agent({
      keepAlive: true, maxSockets: connections, timeout: keepAliveTimeout, ...(tls || {}),
    });
    this.client = axios.create({
      httpAgent: this.httpAgent,
      httpsAgent: this.httpsAgent,
      responseType: 'text',
      transformResponse: [(data) => data],
      validateStatus: () => true,
      maxContentLength: maxResponseBytes,
      maxRedirects: 0,
      proxy: false, // a proxy, if wanted, is set through an interceptor or the route's config
    });
  }

  async request({
    origin, path, method, headers, body, signal, idempotent = true, observer = null,
  }) {
    // axios does not say when its agent gave the request a socket: the time on the wire is
    // counted from the start, so a request queued in the agent may count against the backend.
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.client.request({ url: origin + path, method, headers, data: body, signal: asAbortSignal(signal) });
        if (observer !== null) observer.headers(res.status); // axios gives the headers with the whole body
        const encoding = res.headers['content-encoding'];
        const undecoded = encoding === undefined ? null : codingOf(encoding);
        if (undecoded !== null) throw notDecoded(encoding, started, signal);
        const retryAfter = res.status === 429 || res.status === 503 ? res.headers['retry-after'] : undefined;
        const text = typeof res.data === 'string' ? res.data : String(res.data);
        return retryAfter === undefined ? { status: res.status, text } : { status: res.status, text, retryAfter };
      } catch (err) {
        // A reused connection that broke before any answer: once more, as the undici engine does.
        if (attempt === 0 && idempotent && err.response === undefined && BROKEN.has(err.code) && !(signal && signal.aborted)) {
          if (observer !== null) observer.reconnect();
          continue;
        }
        if (err instanceof EngineError) throw err;
        throw new EngineError(failureReason(err, signal), err, performance.now() - started, signal);
      }
    }
  }

  async close() {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

const BROKEN = new Set(['ECONNRESET', 'EPIPE']);

/** An answer in a coding axios did not decode (it decodes gzip, deflate and br). */
function notDecoded(encoding, started, signal) {
  const err = undecodable(encoding);
  const failure = new EngineError(REASON.ERROR, err, performance.now() - started, signal);
  failure.detail = err.message; // no code of its own: its words are the detail
  return failure;
}

module.exports = { Engine };
