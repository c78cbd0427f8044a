'use strict';

const http = require('node:http');
const { performance } = require('node:perf_hooks');
const https = require('node:https');
const axios = require('axios');
const { reasonOf, EngineError } = require('./errors');
const { asAbortSignal } = require('../abort');

/** axios over keep-alive agents; the body is read as text, at most maxResponseBytes. */
class Engine {
  constructor({ connections = 64, maxResponseBytes = 64 * 1024 } = {}) {
    this.name = 'axios';
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: connections });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: connections });
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

  async request({ origin, path, method, headers, body, signal }) {
    // axios does not say when its agent gave the request a socket: the time on the wire is
    // counted from the start, so a request queued in the agent may count against the backend.
    const started = performance.now();
    try {
      const res = await this.client.request({ url: origin + path, method, headers, data: body, signal: asAbortSignal(signal) });
      return { status: res.status, text: typeof res.data === 'string' ? res.data : String(res.data) };
    } catch (err) {
      throw new EngineError(reasonOf(err, signal), err, performance.now() - started, signal);
    }
  }

  async close() {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

module.exports = { Engine };
