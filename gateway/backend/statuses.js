'use strict';

// What an HTTP answer's status means for the caller (docs/rest-contract.md has the table):
//
//   a. the route's `statuses` (the contract's: backend.statuses) wins; but a status it maps to
//      app_error whose body is plainly not the API's (a proxy's or load balancer's page: not
//      parseable in the route's format, formats.js) or is a SOAP fault that blames the server is a
//      host error, since such a body says nothing about the caller (a module route's mapping wins
//      outright: its handler reads the bodies itself, in any format);
//   b. 2xx: ok;
//   c. 404: app_error (the API's "no such thing");
//   d. 401, 403: the gateway's credentials were refused (unauthorized: token refresh, host error);
//   e. any other 4xx but 408 and 429 whose body is the API's and carries a value at errorPath
//      (the contract's {"error": ...}): app_error;
//   f. the rest, 408, 429 and 5xx included, is a host error: evidence against the origin.
//
// Only the status decides for a 2xx or a 404; the body is read for the other 4xx alone, so that
// the common answers cost nothing here.

const { KIND, REASON, httpReason } = require('./outcome');
const { JSON_FORMAT, NotInFormat, readBody } = require('./formats');
const { ROUTE_KIND } = require('../route-kinds');

/** kindOf()'s answer for 401/403 unmapped: a host error of its own (the token is dropped, the auth warned about). */
const UNAUTHORIZED = 'unauthorized';
/** parseBody()'s answer for a body that is not in the route's format. */
const FOREIGN = Symbol('foreign body');

/** {"404": "ok"} as configured -> Map(404 => 'ok'), or null for none. */
function statusMap(statuses) {
  if (statuses === undefined || statuses === null) return null;
  const entries = Object.entries(statuses);
  return entries.length === 0 ? null : new Map(entries.map(([k, v]) => [Number(k), v]));
}

/** How a route's answers are read (formats.js); the default contract's and a module's are JSON. */
const formatOf = (spec) => (spec.format === undefined ? JSON_FORMAT : spec.format);

/**
 * The body in the route's format (spec: a compiled route, or the contract's {statuses,
 * errorPath}): the document read, undefined for an empty body, FOREIGN when it is not in the format.
 */
function parseBody(text, spec) {
  if (text === undefined || text.length === 0) return undefined;
  const doc = readBody(formatOf(spec), text);
  return doc instanceof NotInFormat ? FOREIGN : doc;
}

/** The value at the route's errorPath in a read body, or undefined (none, null or ''). */
function errorAt(body, spec) {
  if (body === undefined || body === FOREIGN || body === null || typeof body !== 'object') return undefined;
  const v = formatOf(spec).path(body, spec.errorPath);
  return v === null || v === '' ? undefined : v;
}

/**
 * KIND.OK, KIND.APP_ERROR, KIND.HOST_ERROR or UNAUTHORIZED for an answer's status (the rules at
 * the top of this file). text is read only where the rules need it.
 */
function kindOf(status, text, spec) {
  const mapped = spec.statuses === null ? undefined : spec.statuses.get(status);
  if (mapped !== undefined) {
    if (mapped !== KIND.APP_ERROR || spec.kind === ROUTE_KIND.MODULE) return mapped;
    const body = parseBody(text, spec);
    if (body === FOREIGN || (body !== undefined && formatOf(spec).serverFault(body))) return KIND.HOST_ERROR;
    return KIND.APP_ERROR;
  }
  if (status >= 200 && status < 300) return KIND.OK;
  if (status === 404) return KIND.APP_ERROR;
  if (status === 401 || status === 403) return UNAUTHORIZED;
  if (status >= 400 && status < 500 && status !== 408 && status !== 429 && errorAt(parseBody(text, spec), spec) !== undefined) return KIND.APP_ERROR;
  return KIND.HOST_ERROR;
}

/** The host error reason of a status: rate_limited (429), request_timeout (408), else http_NNN. */
function statusReason(status) {
  if (status === 429) return REASON.RATE_LIMITED;
  if (status === 408) return REASON.REQUEST_TIMEOUT;
  return httpReason(status);
}

/**
 * The text for the ERROR tag of an app_error: the value at errorPath (a string, a number, or an
 * object's `message`), else a body that is one short line of plain text, else "backend HTTP NNN".
 * Never a page of markup: a proxy's HTML reached the router's ERROR tag with its CR/LF as '?'.
 */
function errorText(text, spec, status) {
  const body = parseBody(text, spec);
  const v = errorAt(body, spec);
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v !== undefined && typeof v === 'object' && typeof v.message === 'string' && v.message !== '') return v.message;
  if (body === FOREIGN && text.length < 256 && PLAIN_LINE.test(text)) return text.trim();
  return `backend HTTP ${status}`;
}

/** One line of printable ASCII without markup. */
const PLAIN_LINE = /^[\x20-\x3b\x3d\x3f-\x7e]+\r?\n?$/;

module.exports = { statusMap, kindOf, statusReason, errorText, parseBody, formatOf, UNAUTHORIZED };
