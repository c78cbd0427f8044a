'use strict';

// The HTTP client behind one small interface, so the gateway does not care which engine runs:
//   engine.request({origin, path, method, headers, body, signal, idempotent, group}, observer)
//     -> Promise<{status, text, retryAfter}> (retryAfter: a 429's or 503's Retry-After header,
//        only when there is one)
//     signal: an AbortSignal, or a query's QuerySignal (../abort.js): an engine that hands it on
//       to a library passes asAbortSignal(signal). Every signal the backend gives fires at a
//       deadline (the query's, a route's timeoutMs, a shadow call's, a token fetch's), so a
//       request with one has no time limit of the engine's own (undici's headers and body
//       timers are off for it); one without keeps the engine's.
//     idempotent: false when a request whose reused connection broke must not be sent again.
//     group: whose request it is (a router session), for a fair share of connections (undici).
//     observer: null, or {requestHeaders, headers(statusCode), reconnect()} (../diagnostics.js's
//       RequestView): the request leaves with its requestHeaders (a subscriber may have set one)
//       in place of the request's own, and it is told when the status line and headers arrive,
//       and when the request is sent again on another connection. It comes beside the request,
//       not in a copy of it: spreading the request's twenty-odd fields into a new object cost
//       1.4 us a query while requests are watched, as much as the rest of the chain (docs/performance.md).
//   engine.close()
// A failed request rejects with an EngineError (../errors.js) whose `reason` is one of outcome.js's:
//   'aborted' (the router went away), 'deadline' (the query's), 'timeout' (a route's timeoutMs),
//   'too_large', 'unreachable', 'reset', 'tls_error', 'error'; with `onWireMs` (how long it was
//   on a connection, -1 when it never was), `late` (a deadline timer that fired late aborted it)
//   and `detail` (what exactly happened, for the log).
// Every engine decodes a compressed answer (Content-Encoding gzip, deflate, br) and applies
// maxResponseBytes to the decoded size: text is always the answer as the backend meant it.

const { ConfigError } = require('../../../lib/errors');
const { ACCEPT_ENCODING, DECODABLE } = require('./content-encoding');

const ENGINES = {
  undici: () => require('./undici'),
  axios: () => require('./axios'),
};

/**
 * The engine options from the configuration's backend section (or the schema's defaults, for a
 * bench or a test): engines have no defaults of their own, so that the schema is the one place
 * a default is written.
 */
const engineOptions = (backend) => ({
  connections: backend.connections, maxResponseBytes: backend.maxResponseBytes, keepAliveTimeout: backend.keepAliveTimeoutMs,
});

/** options: engineOptions(), and tls and proxy where there are any. */
function createEngine(name, options) {
  for (const key of ['connections', 'maxResponseBytes', 'keepAliveTimeout']) {
    if (!Number.isFinite(options[key])) throw new TypeError(`createEngine: options.${key} is missing (engineOptions(config.backend) gives it)`);
  }
  const factory = ENGINES[name];
  if (!factory) throw new ConfigError(`backend.engine: unknown HTTP engine '${name}' (known: ${Object.keys(ENGINES).join(', ')})`);
  const { Engine } = factory();
  return new Engine(options);
}

module.exports = {
  createEngine, engineOptions, ENGINE_NAMES: Object.keys(ENGINES), ACCEPT_ENCODING, DECODABLE,
};
