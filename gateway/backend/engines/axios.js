'use strict';

const http = require('node:http');
const { performance } = require('node:perf_hooks');
const https = require('node:https');
const axios = require('axios');
const { failureReason, EngineError } = require('../errors');
const { asAbortSignal } = require('../abort');
const { codingOf, Decoding, textOf } = require('./content-encoding');
const { REASON } = require('../outcome');

/**
 * axios over keep-alive agents. tls: the backend's secure context and servername
 * (config/backend.js), for every https origin. No proxy: the config refuses backend.proxy with
 * this engine, and the proxy environment is not read.
 *
 * axios hands over the body as the stream of bytes it came as, and this engine reads it as the
 * undici engine does: at most maxResponseBytes as sent, a compressed answer decoded by the same
 * Decoding with the limit on its decoded size (content-encoding.js), the text made by the same
 * textOf. axios's own decoding is not used: it flushes whatever a cut gzip, deflate or br stream
 * gave so far and calls that the answer (a gzip body without its trailer, or half of one), where
 * the undici engine refused it. A body cut short, coded or not, is never an answer on either.
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
    this.maxResponseBytes = maxResponseBytes;
    this.client = axios.create({
      httpAgent: this.httpAgent,
      httpsAgent: this.httpsAgent,
      responseType: 'stream',
      decompress: false,
      validateStatus: () => true,
      maxContentLength: -1, // counted as the body is read (readBody): axios's count would wrap the stream in another
      maxRedirects: 0,
      proxy: false, // a proxy, if wanted, is set through an interceptor or the route's config
    });
  }

  async request(request, observer = null) {
    const {
      origin, path, method, body, signal, idempotent = true,
    } = request;
    const headers = observer === null ? request.headers : observer.requestHeaders;
    // axios does not say when its agent gave the request a socket: the time on the wire is
    // counted from the start, so a request queued in the agent may count against the backend.
    const started = performance.now();
    const res = await this.send(origin + path, method, headers, body, signal, idempotent, observer, started);
    if (observer !== null) observer.headers(res.status);
    const encoding = res.headers['content-encoding'];
    const coding = encoding === undefined ? null : codingOf(encoding);
    if (coding instanceof Error) {
      res.data.destroy(); // nothing more of it is read
      throw notDecoded(coding, started, signal);
    }
    let text;
    try {
      text = await readBody(res.data, coding, this.maxResponseBytes);
    } catch (err) {
      throw new EngineError(failureReason(err, signal), err, performance.now() - started, signal);
    }
    const retryAfter = res.status === 429 || res.status === 503 ? res.headers['retry-after'] : undefined;
    return retryAfter === undefined ? { status: res.status, text } : { status: res.status, text, retryAfter };
  }

  /** The request, up to its status line and headers: the body is still to be read. */
  async send(url, method, headers, body, signal, idempotent, observer, started) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.client.request({
          url, method, headers, data: body, signal: asAbortSignal(signal),
        });
      } catch (err) {
        // A reused connection that broke before any answer: once more, as the undici engine does.
        if (attempt === 0 && idempotent && err.response === undefined && BROKEN.has(err.code) && !(signal && signal.aborted)) {
          if (observer !== null) observer.reconnect();
          continue;
        }
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

/**
 * The body of an answer, as text: rejects with the stream's error (ECONNRESET: the connection
 * closed before the body's end; an abort), a zlib error, or a size-limit error with undici's code.
 */
function readBody(stream, coding, maxBytes) {
  return new Promise((resolve, reject) => {
    let settled = false;
    let ended = false;
    const settle = (err, buffer) => {
      if (settled) return;
      settled = true;
      if (err === null) {
        resolve(textOf(buffer));
        return;
      }
      if (decoding !== null) decoding.destroy();
      stream.destroy();
      reject(err);
    };
    const decoding = coding === null ? null : new Decoding(coding, maxBytes, settle);
    const chunks = [];
    let bytes = 0;
    stream.on('data', (chunk) => {
      if (settled) return;
      bytes += chunk.length;
      if (bytes > maxBytes) settle(overLimit(maxBytes));
      else if (decoding === null) chunks.push(chunk);
      else decoding.write(chunk);
    });
    stream.on('end', () => {
      ended = true;
      if (decoding !== null) decoding.end(); // settles through its callback
      else settle(null, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    });
    stream.on('error', (err) => settle(err));
    // Destroyed without an error and before its end: no whole body either.
    stream.on('close', () => {
      if (!ended) settle(Object.assign(new Error('the answer ended before its body did'), { code: 'ECONNRESET' }));
    });
  });
}

/** What undici's maxResponseSize fails with: one classification (too_large) reads both engines. */
const overLimit = (maxBytes) => Object.assign(new Error(`the answer is over ${maxBytes} bytes (backend.maxResponseBytes)`), {
  code: 'UND_ERR_RES_EXCEEDED_MAX_SIZE',
});

/** An answer in a coding the gateway does not decode. */
function notDecoded(err, started, signal) {
  const failure = new EngineError(REASON.ERROR, err, performance.now() - started, signal);
  failure.detail = err.message; // no code of its own: its words are the detail
  return failure;
}

module.exports = { Engine };
