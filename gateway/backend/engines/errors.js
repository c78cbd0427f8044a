'use strict';

const { EngineError, isTlsCode } = require('../../../lib/errors');
const { isDeadline } = require('../abort');
const { REASON } = require('../outcome');

// What an engine's failure means: the stable outcome reason of a low-level error. The class an
// engine rejects with, EngineError, is in the product's error catalogue (lib/errors.js).

/** Maps a low-level error to a stable reason. */
function reasonOf(err, signal) {
  if (signal && signal.aborted) {
    // The query's deadline, or a route's timeoutMs (AbortSignal.timeout), is the backend's failure;
    // any other abort (the router went away) is not.
    const reason = signal.reason;
    if (isDeadline(reason)) return REASON.DEADLINE;
    if (reason && reason.name === 'TimeoutError') return REASON.TIMEOUT;
    return REASON.ABORTED;
  }
  const code = err && (err.code || (err.cause && err.cause.code));
  if (isTlsCode(code) || isTlsCode(err && err.cause && err.cause.code)) return REASON.TLS_ERROR;
  switch (code) {
    case 'UND_ERR_ABORTED': case 'ABORT_ERR': case 'ERR_CANCELED': return REASON.ABORTED;
    case 'UND_ERR_RES_EXCEEDED_MAX_SIZE': case 'ERR_BAD_RESPONSE': case 'ERR_FR_MAX_BODY_LENGTH_EXCEEDED': return REASON.TOO_LARGE;
    case 'ECONNREFUSED': case 'ENOTFOUND': case 'EHOSTUNREACH': case 'ENETUNREACH': case 'EAI_AGAIN': case 'UND_ERR_CONNECT_TIMEOUT': return REASON.UNREACHABLE;
    case 'ECONNRESET': case 'UND_ERR_SOCKET': case 'EPIPE': case 'UND_ERR_CLOSED': return REASON.RESET;
    default: return REASON.ERROR;
  }
}

module.exports = { reasonOf, EngineError };
