'use strict';

// The backend's error catalogue: every code and error class of a backend request (its engine, its
// proxy, its credentials, its deadline, a handler module's ctx.request) is defined here, with what
// such an error means: failureReason (the stable outcome reason of a failed request) and causeOf
// (what exactly happened, for an operator). The product's catalogue is lib/errors.js, the codec's
// lib/protocol/errors.js; tests/architecture/error-catalogue.test.js checks all three. Each class
// is a Ged145Error with a stable `code`; metrics and logs use the outcome reason it carries.

const { Ged145Error } = require('../../lib/errors');
const { REASON } = require('./outcome');

const CODES = Object.freeze({
  ENGINE: 'ERR_GED145_ENGINE', // a backend HTTP request failed (EngineError)
  DEADLINE: 'ERR_GED145_DEADLINE', // a query's deadline passed: the reason its backend request is aborted with
  PROXY: 'ERR_GED145_PROXY', // the forward proxy refused a CONNECT tunnel
  BACKEND: 'ERR_GED145_BACKEND', // a handler module's ctx.request got no HTTP answer
  AUTH: 'ERR_GED145_AUTH', // no credentials for a backend request: the token endpoint failed
  PLACEHOLDER: 'ERR_GED145_PLACEHOLDER', // a placeholder value that cannot be a path segment (or XML text, in a body)
});

/**
 * The reason a session's query aborts its backend request with when its deadline passed, so that
 * the backend's health and breaker can count it as the origin's failure; any other abort (the
 * router went away) is not the origin's fault. late: the deadline timer fired late, so the event
 * loop was busy and an answer may have been waiting unread: no evidence against the origin.
 */
class DeadlineError extends Ged145Error {
  constructor(late) {
    super(CODES.DEADLINE, 'query deadline');
    this.late = late;
  }
}

/**
 * A backend request that got no usable answer; `reason` is one of the stable outcome reasons
 * (gateway/backend/outcome.js, failureReason), and `detail` what exactly happened (causeOf).
 * onWireMs: how long the request had been written to the backend when it ended (-1: it never
 * was, it waited for a free connection); late: it was aborted by a deadline that fired late.
 */
class EngineError extends Ged145Error {
  constructor(reason, cause, onWireMs = -1, signal = undefined) {
    super(CODES.ENGINE, `backend request failed: ${reason}`, { cause });
    this.reason = reason;
    this.detail = causeOf(cause);
    this.onWireMs = onWireMs;
    this.late = signal !== undefined && signal !== null && signal.aborted && signal.reason instanceof DeadlineError && signal.reason.late;
  }
}

/** The forward proxy answered CONNECT with something other than 200. */
class ProxyError extends Ged145Error {
  constructor(message) {
    super(CODES.PROXY, message);
  }
}

/** A request that could not be given credentials: the token endpoint failed or refused us. */
class AuthError extends Ged145Error {
  constructor(message, reason) {
    super(CODES.AUTH, message);
    this.reason = reason;
  }
}

/**
 * A placeholder value that would change the URL's shape: empty (the segment vanishes), "." or ".."
 * (URL normalisation, in the WHATWG parser axios uses, resolves even their escaped forms %2E and
 * %2E%2E, climbing the path). The query fails with E_AG_HOST_ERROR2 instead of reaching the backend.
 */
class PlaceholderError extends Ged145Error {
  /** why: what the value cannot be (a body template's placeholder: "XML text"). */
  constructor(key, value, why = 'a URL path segment') {
    super(CODES.PLACEHOLDER, `${key} is ${value === '' ? 'empty' : `'${value}'`}, which cannot be ${why}`);
    this.key = key;
  }
}

/** A request a handler made with ctx.request that got no HTTP answer; `outcome` is what the query gets if the handler lets it through. */
class BackendRequestError extends Ged145Error {
  constructor(outcome) {
    super(CODES.BACKEND, outcome.detail ? `${outcome.text}: ${outcome.detail}` : outcome.text);
    this.reason = outcome.reason;
    this.outcome = outcome;
  }
}

// ---- what an error says ----------------------------------------------------------------------

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
  if (code === null || code.startsWith('UND_ERR_ABORTED') || code === 'ABORT_ERR' || code === 'ERR_CANCELED' || code === CODES.DEADLINE) return null;
  if (e.hostname && (code === 'ENOTFOUND' || code === 'EAI_AGAIN')) return `${code} ${e.hostname}`;
  if (e.address) return `${code} ${e.address}${e.port ? `:${e.port}` : ''}`;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect timeout';
  return code;
}

/** The stable outcome reason (REASON) of a request that failed with err, or was aborted through signal. */
function failureReason(err, signal) {
  if (signal && signal.aborted) {
    // The query's deadline, or a route's timeoutMs (AbortSignal.timeout), is the backend's failure;
    // any other abort (the router went away) is not.
    const reason = signal.reason;
    if (reason !== undefined && reason !== null && reason.code === CODES.DEADLINE) return REASON.DEADLINE;
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

module.exports = { CODES, DeadlineError, EngineError, ProxyError, AuthError, PlaceholderError, BackendRequestError, failureReason };
