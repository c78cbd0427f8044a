'use strict';

// A route's request body template, compiled once at load (backend/request.js fillBody fills it for
// each query). routes.<subtype>.body is "query" (the contract's JSON), "none", a JSON value (a JSON
// template: placeholders in its strings) or a string (a text template: a SOAP envelope, a form).
// {clid}, {vars.1}, {ecc.NAME}... are placeholders, as in URL templates; each value is escaped as
// the body's content type needs, so that no caller data can change the body's structure.

const { ConfigError } = require('../../lib/errors');
const { isPlaceholder } = require('../../lib/query-fields');
const { BODY_ESCAPES } = require('../backend/request');

/** {name}: a placeholder where name has none of the characters JSON or XML syntax puts around braces. */
const PLACEHOLDER = /\{([^{}\s"'<>&\\]+)\}/g;

/** The escaping a content type needs: JSON, XML (text/xml, application/soap+xml, *+xml), a form, or none. */
function escapeFor(contentType) {
  const type = contentType.split(';')[0].trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (type === 'text/xml' || type === 'application/xml' || type.endsWith('+xml')) return 'xml';
  if (type === 'application/x-www-form-urlencoded') return 'form';
  return 'text';
}

/**
 * routes.<subtype>.body -> null (the route sends the query JSON, or nothing: routes.js decides) or
 * the compiled template {parts, escape, contentType}. contentType: the route's own Content-Type
 * header, if it sets one. A text template without one is sent as text/xml when it starts with '<'
 * (SOAP 1.1's type), else as text/plain; charset=utf-8.
 */
function compileBody(body, { contentType = null, where = 'body' } = {}) {
  if (body === undefined || body === 'query' || body === 'none') return null;
  const json = typeof body !== 'string';
  const text = json ? JSON.stringify(body) : body;
  let type = contentType;
  if (type === null) {
    if (json) type = 'application/json';
    else type = /^\s*</.test(text) ? 'text/xml; charset=utf-8' : 'text/plain; charset=utf-8';
  }
  // A JSON template's placeholders are inside its strings, whatever the header says.
  const escape = json ? 'json' : escapeFor(type);
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    if (!isPlaceholder(m[1])) throw new ConfigError(`${where}: unknown placeholder {${m[1]}}`);
    parts.push(text.slice(last, m.index), m[1]);
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return {
    parts, escape: BODY_ESCAPES[escape], escaping: escape, contentType: type,
  };
}

module.exports = { compileBody };
