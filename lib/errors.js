'use strict';

// The product's error catalogue, in one module as undici's lib/core/errors.js is: every code and
// every error class of the product is defined here, and nowhere else (tests/architecture/error-catalogue.test.js
// checks it). Three tables: CODES (the command line, the operator, the backend side), the
// codec's ERROR_CODES and the encoder's ENCODE_ERROR_CODES, which lib/protocol exports as its
// own. Each class has a `name` and a stable `code`; programs use the code, never the text. The
// CLI decides what to print and how to exit by the code (bin/ged145.js). Every code starts
// ERR_GED145_; logs and metric labels use its short snake_case form, derived from it (reasonOf:
// ERR_GED145_TAG_OVERRUN -> tag_overrun), as the backend's outcome reasons are.

const { STATUS } = require('./protocol/constants');

const PREFIX = 'ERR_GED145_';

const CODES = Object.freeze({
  // The command line and the operator.
  USAGE: 'ERR_GED145_USAGE', // a bad command line: one line, a pointer to --help, exit 2
  OPERATOR: 'ERR_GED145_OPERATOR', // an expected condition (bad config, port in use): one line, exit 1
  CONFIG: 'ERR_GED145_CONFIG', // a configuration that cannot be used: ConfigError, printed as an OperatorError
  CAPTURE: 'ERR_GED145_CAPTURE', // a capture file that is not one, or is cut short (tools/decode)
  CASE_FAILED: 'ERR_GED145_CASE_FAILED', // a conformance case saw the host break its requirement (tools/conformance)
  CASE_SKIPPED: 'ERR_GED145_CASE_SKIPPED', // a conformance case cannot run against this host as declared

  // The backend side.
  ENGINE: 'ERR_GED145_ENGINE', // a backend HTTP request failed (EngineError)
  DEADLINE: 'ERR_GED145_DEADLINE', // a query's deadline passed: the reason its backend request is aborted with
  PROXY: 'ERR_GED145_PROXY', // the forward proxy refused a CONNECT tunnel
  BACKEND: 'ERR_GED145_BACKEND', // a handler module's ctx.request got no HTTP answer
  AUTH: 'ERR_GED145_AUTH', // no credentials for a backend request: the token endpoint failed
  PLACEHOLDER: 'ERR_GED145_PLACEHOLDER', // a placeholder value that cannot be a path segment (or XML text, in a body)
});

/** 'ERR_GED145_TAG_OVERRUN' -> 'tag_overrun': the short form logs and metric labels use. */
const reasonOf = (code) => code.slice(PREFIX.length).toLowerCase();

/** The codec's: one code per way a frame can be wrong (ProtocolError). */
const ERROR_CODES = Object.freeze({
  FRAME_TOO_LARGE: 'ERR_GED145_FRAME_TOO_LARGE', // fatal: MessageLength over the limit
  UNKNOWN_TYPE: 'ERR_GED145_UNKNOWN_TYPE', // no such MessageType
  WRONG_DIRECTION: 'ERR_GED145_WRONG_DIRECTION', // a type the other side sends
  TRUNCATED: 'ERR_GED145_TRUNCATED', // body shorter than the fixed part
  TAG_OVERRUN: 'ERR_GED145_TAG_OVERRUN', // a tag's length runs past the body
  DANGLING_BYTE: 'ERR_GED145_DANGLING_BYTE', // a lone byte where a tag header should be
  BAD_ECC: 'ERR_GED145_BAD_ECC', // an ECC or ECC_ARRAY tag without its NUL-terminated layout
});

/** The encoder's: one code per rule it refuses a message by (EncodeError). */
const ENCODE_ERROR_CODES = Object.freeze({
  OUT_OF_RANGE: 'ERR_GED145_ENCODE_OUT_OF_RANGE', // an integer field outside its width
  NOT_TEXT: 'ERR_GED145_ENCODE_NOT_TEXT', // a text field that is not a string
  NON_ASCII: 'ERR_GED145_ENCODE_NON_ASCII', // a text field with NUL or a character past 0x7f
  TAG_TOO_LONG: 'ERR_GED145_ENCODE_TAG_TOO_LONG', // more data than one tag carries (255, or 248 encrypted)
  BAD_VAR: 'ERR_GED145_ENCODE_BAD_VAR', // a vars key that is not 1..10
  BAD_ECC: 'ERR_GED145_ENCODE_BAD_ECC', // an empty ECC name
  BAD_STATUS: 'ERR_GED145_ENCODE_BAD_STATUS', // a status name or number not in the table
  UNKNOWN_TYPE: 'ERR_GED145_ENCODE_UNKNOWN_TYPE', // a message type the encoder does not know
});
const KNOWN_ENCODE_CODES = new Set(Object.values(ENCODE_ERROR_CODES));

// ---- the command line and the operator -------------------------------------------------------

/** A bad command line. */
class UsageError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'UsageError';
    this.code = CODES.USAGE;
  }
}

/** An operator-facing failure (bad config file, port in use, nothing listening): one clear line, no stack. */
class OperatorError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'OperatorError';
    this.code = CODES.OPERATOR;
  }
}

/**
 * A configuration that cannot be used: `problems`, one line each naming the key. Thrown wherever
 * configuration is refused: where a setting is checked or compiled (with one problem), gathered by
 * the loader into one (with all). The CLI prints each problem as a line, without a stack, and exits 1.
 */
class ConfigError extends OperatorError {
  constructor(problems, options) {
    const list = [].concat(problems);
    super(list.map((p) => `config: ${p}`).join('\n'), options);
    this.name = 'ConfigError';
    this.code = CODES.CONFIG;
    this.problems = list;
  }

  /** The same problems under a key ("routes.x: ..."). */
  under(prefix) {
    return new ConfigError(this.problems.map((p) => `${prefix}: ${p}`), { cause: this });
  }
}

/** A capture that is not one, or ends before a header says it should: what was read before is kept. */
class CaptureError extends Error {
  constructor(message) {
    super(message);
    this.name = 'CaptureError';
    this.code = CODES.CAPTURE;
  }
}

/** A conformance case failed: `observed` says what the host did instead of what the case expected. */
class CaseFailure extends Error {
  constructor(observed) {
    super(observed);
    this.name = 'CaseFailure';
    this.code = CODES.CASE_FAILED;
    this.observed = observed;
  }
}

/** A conformance case cannot run against this host as declared (its subtype is not answered with data, say). */
class CaseSkipped extends Error {
  constructor(reason) {
    super(reason);
    this.name = 'CaseSkipped';
    this.code = CODES.CASE_SKIPPED;
  }
}

// ---- the codec -------------------------------------------------------------------------------

/**
 * The one error type of the decoder. `reason` is the code's short form (logs, the
 * protocol_errors_total label). `fatal` means the byte stream can no longer be trusted: close
 * that connection. Otherwise it is a reject: answer FAILURE_CONF with `status` for `invokeId` (or
 * a FAILURE_EVENT when no InvokeID could be read) and carry on.
 */
class ProtocolError extends Error {
  constructor(code, message, { fatal = false, invokeId, typeId, status = STATUS.E_AG_INVALID_MESSAGE } = {}) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
    this.fatal = fatal;
    this.invokeId = invokeId;
    this.typeId = typeId;
    this.status = status;
  }

  get kind() {
    return this.fatal ? 'fatal' : 'reject';
  }

  get reason() {
    return reasonOf(this.code);
  }
}

/** Encoder refusals: thrown before a single byte is written. `code` is one of ENCODE_ERROR_CODES. */
class EncodeError extends TypeError {
  constructor(code, message) {
    if (!KNOWN_ENCODE_CODES.has(code)) throw new TypeError(`unknown EncodeError code ${code}`);
    super(message);
    this.name = 'EncodeError';
    this.code = code;
  }

  get reason() {
    return reasonOf(this.code);
  }
}

// ---- the backend side ------------------------------------------------------------------------

/**
 * The reason a session's query aborts its backend request with when its deadline passed, so that
 * the backend's health and breaker can count it as the origin's failure; any other abort (the
 * router went away) is not the origin's fault. late: the deadline timer fired late, so the event
 * loop was busy and an answer may have been waiting unread: no evidence against the origin.
 */
class DeadlineError extends Error {
  constructor(late) {
    super('query deadline');
    this.name = 'DeadlineError';
    this.code = CODES.DEADLINE;
    this.late = late;
  }
}

/**
 * A backend request that got no usable answer; `reason` is one of the stable outcome reasons
 * (gateway/backend/outcome.js), and `detail` what exactly happened (causeOf).
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
    this.late = signal !== undefined && signal !== null && signal.aborted && signal.reason instanceof DeadlineError && signal.reason.late;
  }
}

/** The forward proxy answered CONNECT with something other than 200. */
class ProxyError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ProxyError';
    this.code = CODES.PROXY;
  }
}

/** A request that could not be given credentials: the token endpoint failed or refused us. */
class AuthError extends Error {
  constructor(message, reason) {
    super(message);
    this.name = 'AuthError';
    this.code = CODES.AUTH;
    this.reason = reason;
  }
}

/**
 * A placeholder value that would change the URL's shape: empty (the segment vanishes), "." or ".."
 * (URL normalisation, in the WHATWG parser axios uses, resolves even their escaped forms %2E and
 * %2E%2E, climbing the path). The query fails with E_AG_HOST_ERROR2 instead of reaching the backend.
 */
class PlaceholderError extends Error {
  /** why: what the value cannot be (a body template's placeholder: "XML text"). */
  constructor(key, value, why = 'a URL path segment') {
    super(`${key} is ${value === '' ? 'empty' : `'${value}'`}, which cannot be ${why}`);
    this.name = 'PlaceholderError';
    this.code = CODES.PLACEHOLDER;
    this.key = key;
  }
}

/** A request a handler made with ctx.request that got no HTTP answer; `outcome` is what the query gets if the handler lets it through. */
class BackendRequestError extends Error {
  constructor(outcome) {
    super(outcome.detail ? `${outcome.text}: ${outcome.detail}` : outcome.text);
    this.name = 'BackendRequestError';
    this.code = CODES.BACKEND;
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

/** A failed listen(), as the operator should read it; other errors as they are. */
function listenError(err, host, port) {
  if (err.code === 'EADDRINUSE') return new OperatorError(`port ${port} on ${host} is already in use`);
  if (err.code === 'EACCES') return new OperatorError(`not allowed to listen on ${host}:${port}`);
  if (err.code === 'EADDRNOTAVAIL') return new OperatorError(`cannot listen on ${host}:${port}: ${host} is not an address of this machine`);
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return new OperatorError(`cannot listen on ${host}:${port}: no such host name`);
  return err;
}

/** The message of whatever was thrown (an Error, a string, a Proxy whose getters throw), for a log line. */
function messageOf(err) {
  try {
    return err instanceof Error ? String(err.message) : String(err);
  } catch {
    return 'an error that cannot be printed';
  }
}

module.exports = {
  PREFIX,
  CODES,
  ERROR_CODES,
  ENCODE_ERROR_CODES,
  reasonOf,
  UsageError,
  OperatorError,
  ConfigError,
  CaptureError,
  CaseFailure,
  CaseSkipped,
  ProtocolError,
  EncodeError,
  DeadlineError,
  EngineError,
  ProxyError,
  AuthError,
  PlaceholderError,
  BackendRequestError,
  isTlsCode,
  causeOf,
  listenError,
  messageOf,
};
