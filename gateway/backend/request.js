'use strict';

// A query as an HTTP request, and an HTTP answer as a GED-145 answer: the default contract's JSON
// body, URL and body templates and their placeholders, and the response mapping, for each query
// (backend.js). A route's templates are parsed once, at load, by config/routes.js and config/body.js.

const { PlaceholderError } = require('./errors');
const { jsonPath } = require('./formats');
const { fieldValue } = require('../../lib/query-fields');

/** The query as the backend sees it in the default contract (absent tags omitted). */
function queryJson(q) {
  const body = {
    subtype: q.subtype,
    invokeId: q.invokeId,
    routerCallDay: q.routerCallDay,
    routerCallKey: q.routerCallKey,
    duplicate: q.duplicate,
    noScriptReply: q.noScriptReply,
  };
  if (q.ced !== undefined) body.ced = q.ced;
  if (q.clid !== undefined) body.clid = q.clid;
  if (q.cdpd !== undefined) body.cdpd = q.cdpd;
  if (q.routingClient !== undefined) body.routingClient = q.routingClient;
  if (q.dn !== undefined) body.dn = q.dn;
  if (q.vars !== undefined) body.vars = q.vars;
  if (q.ecc !== undefined) body.ecc = q.ecc;
  if (q.eccArrays !== undefined) body.eccArrays = q.eccArrays;
  return body;
}

/** A URL path segment from router data: no '/', '?', '#', '%' or CR/LF gets through encodeURIComponent. */
function encodeSegment(key, value) {
  if (value === '' || value === '.' || value === '..') throw new PlaceholderError(key, value);
  return encodeURIComponent(value);
}

/** The template's path with every placeholder filled; throws PlaceholderError for an unusable value. */
function fillTemplate(tpl, q) {
  const { parts } = tpl;
  let out = parts[0];
  for (let i = 1; i < parts.length; i += 2) {
    const v = fieldValue(q, parts[i]);
    out += encodeSegment(parts[i], v === undefined || v === null ? '' : String(v)) + parts[i + 1];
  }
  return out;
}

/**
 * The response mapping {"vars.1": "accountId", "ecc.user.tier": "tier"} -> answer object; path:
 * how the route's format reads a path in its document (formats.js: jsonPath, xmlPath).
 */
function mapResponse(mapping, doc, path = jsonPath) {
  const answer = { vars: {}, ecc: {} };
  for (const [target, source] of mapping) {
    const v = path(doc, source);
    if (v === undefined || v === null) continue;
    if (target.startsWith('vars.')) answer.vars[target.slice(5)] = v;
    else if (target.startsWith('ecc.')) answer.ecc[target.slice(4)] = v;
    else answer[target] = v;
  }
  return answer;
}

/**
 * A route's request body from its template (config/body.js compiles it): the literal parts with
 * each placeholder's value escaped as the body's content type needs, so that no value can end
 * a JSON string, open an XML element or add a form field. An absent field is empty text.
 */
function fillBody(body, q) {
  const { parts, escape } = body;
  let out = parts[0];
  for (let i = 1; i < parts.length; i += 2) {
    const key = parts[i];
    const v = fieldValue(q, key);
    out += escape(key, v === undefined || v === null ? '' : String(v)) + parts[i + 1];
  }
  return out;
}

/** Characters XML 1.0 cannot carry, even as a reference (its production Char), and lone surrogates. */
const NOT_XML_TEXT = /[^\t\n\r\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;
const XML_SPECIAL = /[&<>"'\r]/g;
const XML_ESCAPES = {
  '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\r': '&#xD;',
};

/** How a body template's placeholder values are escaped, by the body's content type (config/body.js picks one). */
const BODY_ESCAPES = Object.freeze({
  /** Inside a JSON string: the template puts the quotes. */
  json: (key, v) => JSON.stringify(v).slice(1, -1),
  /** XML text or an attribute value; a character XML cannot hold refuses the query before the backend. */
  xml: (key, v) => {
    if (NOT_XML_TEXT.test(v)) throw new PlaceholderError(key, v.replace(NOT_XML_TEXT, '?'), 'XML text (it holds a control character)');
    return v.replace(XML_SPECIAL, (c) => XML_ESCAPES[c]);
  },
  /** A form field's value (application/x-www-form-urlencoded). */
  form: (key, v) => {
    try {
      return encodeURIComponent(v);
    } catch {
      throw new PlaceholderError(key, '?', 'form text (it holds a lone surrogate)');
    }
  },
  /** Any other text: the value as it is. */
  text: (key, v) => v,
});

module.exports = {
  PlaceholderError, queryJson, encodeSegment, fillTemplate, fillBody, BODY_ESCAPES, jsonPath, mapResponse,
};
