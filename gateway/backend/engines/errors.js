'use strict';

const { CODES } = require('../../../lib/errors');
const { isDeadline } = require('../abort');
const { REASON } = require('../outcome');

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

/**
 * A TLS handshake that failed: the backend's certificate was not trusted, not for this name,
 * expired, or the backend refused ours. Node names them by OpenSSL's verify codes.
 */
const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID', 'EPROTO', 'ERR_TLS_HANDSHAKE_TIMEOUT',
]);
const isTlsCode = (code) => typeof code === 'string' && (TLS_CODES.has(code) || code.startsWith('ERR_SSL_'));

/**
 * What exactly went wrong, for an operator: "ECONNREFUSED 127.0.0.1:3999", "ENOTFOUND crm.example",
 * "ETIMEDOUT 10.0.0.5:443"; null when the error has no code (the stable reason says it all).
 */
function causeOf(err) {
  let e = err;
  for (let i = 0; i < 3 && e && !e.syscall && e.cause; i++) e = e.cause; // undici and axios wrap the socket error
  const code = e && typeof e.code === 'string' ? e.code : null;
  // An abort says nothing more than its reason does (our deadline marker included).
  if (isTlsCode(code)) return `${code}: ${String(e.reason || e.message).split('\n')[0]}`;
  if (code === null || code.startsWith('UND_ERR_ABORTED') || code === 'ABORT_ERR' || code === 'ERR_CANCELED' || isDeadline(e)) return null;
  if (e.hostname && (code === 'ENOTFOUND' || code === 'EAI_AGAIN')) return `${code} ${e.hostname}`;
  if (e.address) return `${code} ${e.address}${e.port ? `:${e.port}` : ''}`;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect timeout';
  return code;
}

/**
 * A backend request that got no usable answer; `reason` is one of the stable reasons above, and
 * `detail` what exactly happened (causeOf).
 * onWireMs: how long the request had been written to the backend when it ended (-1: it never
 * was, it waited for a free connection); late: it was aborted by a deadline that fired late.
 */
class EngineError extends Error {
  constructor(reason, cause, onWireMs = -1, signal = undefined) {
    super(`backend request failed: ${reason}`, { cause });
    this.name = 'EngineError';
    this.code = CODES.ENGINE;
    this.reason = reason;
    this.detail = causeOf(cause);
    this.onWireMs = onWireMs;
    this.late = signal !== undefined && signal !== null && signal.aborted && signal.reason !== undefined && signal.reason.late === true;
  }
}

module.exports = { reasonOf, EngineError };
