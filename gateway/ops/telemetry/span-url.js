'use strict';

// What a backend span says of its URL (url.full, url.template and the span's name). A query string
// is where APIs take their keys (`?api_key=...`, a signature), written into a route's URL by the
// operator: every value in it becomes REDACTED, the way OpenTelemetry's semantic conventions (1.27)
// redact the values of known signature keys, and its keys stay, so the URL still reads as the one
// sent. Caller data in the path (CLID, DN, CED, CDPD, VAR and ECC values) becomes REDACTED as well,
// unless telemetry.traces.callerData lets it through; the query's own fields (subtype, invokeId,
// routerCallKey...) are shown as sent.

const { CALLER_FIELDS, fieldValue } = require('../../../lib/query-fields');

const REDACTED = 'REDACTED';
const PLACEHOLDER = /\{([^{}]+)\}/g;
const ONE_PLACEHOLDER = /^\{[^{}]+\}$/;
const CALLER = new Set(CALLER_FIELDS);
const isCallerData = (name) => CALLER.has(name) || name.startsWith('vars.') || name.startsWith('ecc.');

/**
 * path with its query string's values (and any fragment) replaced; keep(value) says which to keep.
 * A field without '=' is all value.
 */
function redactQuery(path, keep = () => false) {
  const at = path.indexOf('?');
  if (at === -1) return path.split('#')[0];
  const fields = path.slice(at + 1).split('#')[0].split('&').map((field) => {
    const eq = field.indexOf('=');
    if (eq === -1) return field === '' ? field : REDACTED;
    return keep(field.slice(eq + 1)) ? field : `${field.slice(0, eq)}=${REDACTED}`;
  });
  return `${path.slice(0, at)}?${fields.join('&')}`;
}

/** url.template: the route's path template, a query value kept only where it is one placeholder ({clid}), a literal is redacted. */
function urlTemplate(template) {
  return redactQuery(template, (value) => ONE_PLACEHOLDER.test(value));
}

/**
 * url.full of a request view (backend/diagnostics.js RequestView): its origin and the path sent,
 * query-string values redacted; without callerData a route's path is its template filled with
 * REDACTED for caller data, and a handler module's own path (where caller data may be anywhere) is
 * left out.
 */
function urlFull(request, callerData) {
  const origin = request.origin || '';
  let path;
  if (callerData || request.kind === 'token') path = request.path;
  else if (request.template) {
    path = request.template.replace(PLACEHOLDER, (m, name) => {
      if (isCallerData(name)) return REDACTED;
      const v = request.query ? fieldValue(request.query, name) : undefined;
      return encodeURIComponent(v === undefined || v === null ? '' : String(v));
    });
  }
  return typeof path === 'string' ? `${origin}${redactQuery(path)}` : origin;
}

module.exports = {
  urlFull, urlTemplate, isCallerData, REDACTED,
};
