'use strict';

// What became of a query, in one place: the three kinds an answer from the backend side can be,
// the stable reasons a backend request fails for, and the `outcome` label every query is counted
// under (ged145_queries_total, query_duration_seconds). The backend side builds outcomes with the
// functions here; the session turns them into replies and labels with labelOf(). Labels and
// reasons are snake_case, as Prometheus label values are.
//
//   ok(answer, source)      -> QUERY_RESP status 0 (source: undefined, 'cache', 'stale', 'fallback')
//   appError(text, reason)  -> FAILURE_CONF E_AG_HOST_ERROR2 (the API's own 4xx, or a module's refusal)
//   hostError(reason, text) -> FAILURE_CONF E_AG_HOST_ERROR1 (5xx, 429, a proxy's page, bad JSON, unreachable, ...)

const KIND = Object.freeze({ OK: 'ok', APP_ERROR: 'app_error', HOST_ERROR: 'host_error' });

/** Why a backend request got no usable answer (hostError's reason; http_NNN for a status). */
const REASON = Object.freeze({
  UNREACHABLE: 'unreachable', // refused, no such host, connect timeout
  RESET: 'reset', // the connection broke
  TLS_ERROR: 'tls_error', // the TLS handshake failed: a certificate not trusted, not for this name, expired
  UNAUTHORIZED: 'unauthorized', // HTTP 401 or 403: the backend refused the gateway's credentials
  RATE_LIMITED: 'rate_limited', // HTTP 429: the API (or a proxy before it) says we send too fast
  REQUEST_TIMEOUT: 'request_timeout', // HTTP 408: the server gave up waiting for our request
  PAUSED: 'paused', // the origin asked to wait (Retry-After) and the wait is not over: not asked
  OVER_RATE: 'over_rate', // the rate learnt from the origin's 429s is reached: not asked
  AUTH_FAILED: 'auth_failed', // no token: the token endpoint failed or refused the client
  TOO_LARGE: 'too_large', // the body was over backend.maxResponseBytes
  ERROR: 'error', // any other transport failure
  ABORTED: 'aborted', // the router went away: no failure of the backend
  DEADLINE: 'deadline', // the query's deadline passed first
  TIMEOUT: 'timeout', // the route's own timeoutMs passed first
  BAD_JSON: 'bad_json', // a body that is not a JSON object
  BAD_XML: 'bad_xml', // a route's XML answer that is not well-formed, has a DOCTYPE, or another root element
  CIRCUIT_OPEN: 'circuit_open', // the origin's circuit is open: not asked
  NO_BACKEND: 'no_backend',
  MODULE_ERROR: 'module_error', // a handler module threw
  BAD_ANSWER: 'bad_answer', // a handler module answered something that is not an object (a REST body: bad_json)
  BAD_PLACEHOLDER: 'bad_placeholder', // app error: a URL placeholder value unusable as a path segment
  INTERNAL: 'internal', // a bug of ours, logged
});
const httpReason = (status) => `http_${status}`;

/**
 * Every `outcome` label, so that dashboards and tests can list them (docs/configuration.md).
 * lost_router_gone: the router closed with the query unanswered.
 */
const LABEL = Object.freeze({
  OK: 'ok', CACHED: 'cached', STALE: 'stale', FALLBACK: 'fallback', DUPLICATE: 'duplicate',
  APP_ERROR: 'app_error', HOST_ERROR: 'host_error', DEADLINE: 'deadline', ABORTED: 'aborted',
  LOST: 'lost_router_gone',
  INVALID_KEY: 'invalid_key', // an encrypted query whose fields do not decrypt: refused, never sent on (session/key-check.js)
});
/**
 * The FAILURE_CONF status (its name in lib/protocol's STATUS) each failed label is answered with,
 * written once: the replies (session/reply.js) and ged145:query:settle's `status` read it. The
 * other labels are a QUERY_RESP, or no reply at all (lost_router_gone).
 */
const FAILURE_STATUS = Object.freeze({
  [LABEL.APP_ERROR]: 'E_AG_HOST_ERROR2',
  [LABEL.HOST_ERROR]: 'E_AG_HOST_ERROR1',
  [LABEL.DEADLINE]: 'E_AG_HOST_ERROR1',
  [LABEL.ABORTED]: 'E_AG_HOST_ERROR1',
  [LABEL.INVALID_KEY]: 'E_AG_INVALID_KEY',
});
const SOURCE_LABELS = Object.freeze({ cache: LABEL.CACHED, stale: LABEL.STALE, fallback: LABEL.FALLBACK });

const ok = (answer, source) => (source === undefined ? { kind: KIND.OK, answer } : { kind: KIND.OK, answer, source });
const appError = (text, reason = undefined, status = undefined) => ({
  kind: KIND.APP_ERROR, text, reason, status,
});
/**
 * blame: the outcome is evidence that the origin is failing (breakers.js, health.js);
 * detail: what exactly happened, for logs and /health ("ECONNREFUSED 127.0.0.1:3999").
 */
const hostError = (reason, text, blame = false, detail = null) => ({
  kind: KIND.HOST_ERROR, reason, text, blame, detail,
});

/** The metrics label of an outcome that reached a reply. */
function labelOf(outcome) {
  switch (outcome.kind) {
    case KIND.OK: return outcome.source === undefined ? LABEL.OK : SOURCE_LABELS[outcome.source];
    case KIND.APP_ERROR: return LABEL.APP_ERROR;
    default: return outcome.reason === REASON.ABORTED ? LABEL.ABORTED : LABEL.HOST_ERROR;
  }
}

const OK_LABELS = new Set([LABEL.OK, LABEL.DUPLICATE, LABEL.CACHED, LABEL.STALE, LABEL.FALLBACK]);
/**
 * Whether a label counts as answered (QUERY_RESP with data the router can use: from the backend,
 * the cache, a stale answer or the fallback) for a session's totals. app_error is counted apart
 * (the backend's own "no"); the rest failed.
 */
const isAnswered = (label) => OK_LABELS.has(label);

/**
 * The labels of a query that failed: the router got no usable answer (FAILURE_CONF other than
 * the API's own app_error, or no reply at all). The session's failed-query log line, the status
 * page, the spans' error status and the objectives read this one list.
 */
const FAILED_LABELS = Object.freeze(Object.values(LABEL).filter((label) => !OK_LABELS.has(label) && label !== LABEL.APP_ERROR));
const FAILED_SET = new Set(FAILED_LABELS);
const isFailed = (label) => FAILED_SET.has(label);

/** The labels of a query whose router went away before its reply: no event for an objective. */
const ROUTER_GONE_LABELS = Object.freeze([LABEL.LOST, LABEL.ABORTED]);

/** The reasons of a request that gave up waiting (the query's deadline, a route's timeoutMs): slow, not refused. */
const gaveUp = (reason) => reason === REASON.DEADLINE || reason === REASON.TIMEOUT;

module.exports = {
  KIND, REASON, LABEL, FAILURE_STATUS, FAILED_LABELS, ROUTER_GONE_LABELS, httpReason, ok, appError, hostError, labelOf, isAnswered, isFailed, gaveUp,
};
