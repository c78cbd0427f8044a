'use strict';

// The HTTP client behind one small interface, so the gateway does not care which engine runs:
//   engine.request({origin, path, method, headers, body, signal}) -> Promise<{status, text, retryAfter}>
//   (retryAfter: a 429's or 503's Retry-After header, only when there is one)
//     signal: an AbortSignal, or a query's QuerySignal (../abort.js): an engine that hands it on
//     to a library passes asAbortSignal(signal).
//   engine.close()
// A failed request rejects with an Error whose `reason` is one of:
//   'aborted' (deadline or router gone), 'too_large', 'unreachable', 'reset', 'error'.
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

/** options: engineOptions(), and tls, proxy and onReconnect where there are any. */
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
