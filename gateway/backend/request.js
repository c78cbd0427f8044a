'use strict';

// A query as an HTTP request, and an HTTP answer as a GED-145 answer: the default contract's JSON
// body, URL templates and their placeholders, header values from the environment, JSON paths and
// the response mapping. config/routes.js compiles a route's settings with these, once, at load;
// backend.js fills them in for each query.

const { ConfigError, PlaceholderError } = require('../../lib/errors');
const { VAR_NUMBER } = require('../../lib/protocol');

/** vars.N, a peripheral variable as a placeholder, a cache key field or a response target. */
const VAR_KEY = new RegExp(`^vars\\.${VAR_NUMBER}$`);

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

/** Reads a placeholder's value out of a query: clid, vars.1, ecc.user.acct, routerCallKey, ... */
function queryValue(q, key) {
  if (key.startsWith('vars.')) return q.vars ? q.vars[key.slice(5)] : undefined;
  if (key.startsWith('ecc.')) return q.ecc ? q.ecc[key.slice(4)] : undefined;
  if (!PLACEHOLDER_FIELDS.has(key)) return undefined;
  return q[key];
}
const PLACEHOLDER_FIELDS = new Set(['subtype', 'invokeId', 'routerCallDay', 'routerCallKey', 'ced', 'clid', 'cdpd', 'routingClient', 'dn']);

/** Splits a URL template into literal parts and placeholder keys, once, at config load. */
function parseTemplate(template) {
  const m = /^(https?:\/\/[^/?#]+)(.*)$/.exec(template);
  if (!m) throw new ConfigError(`url '${template}' must start with http:// or https:// and a host`);
  const [, origin, rest] = m;
  if (origin.includes('{')) throw new ConfigError('placeholders are allowed in the path and query only, never in the host');
  const parts = [];
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  let match;
  while ((match = re.exec(rest)) !== null) {
    const key = match[1];
    if (!PLACEHOLDER_FIELDS.has(key) && !VAR_KEY.test(key) && !/^ecc\.[^{}]+$/.test(key)) {
      throw new ConfigError(`unknown placeholder {${key}}`);
    }
    parts.push(rest.slice(last, match.index), key);
    last = match.index + match[0].length;
  }
  parts.push(rest.slice(last));
  const pathPart = rest === '' ? '/' : rest;
  return { origin, parts: rest === '' ? ['/'] : parts, hasPlaceholders: parts.length > 1, path: pathPart };
}

/** The template's path with every placeholder filled; throws PlaceholderError for an unusable value. */
function fillTemplate(tpl, q) {
  const { parts } = tpl;
  let out = parts[0];
  for (let i = 1; i < parts.length; i += 2) {
    const v = queryValue(q, parts[i]);
    out += encodeSegment(parts[i], v === undefined || v === null ? '' : String(v)) + parts[i + 1];
  }
  return out;
}

/** "a.b[0].c" -> value in a parsed JSON answer, or undefined. */
function jsonPath(obj, p) {
  let o = obj;
  for (const key of p.replace(/\[(\d+)\]/g, '.$1').replace(/^\$\.?/, '').split('.')) {
    if (key === '') continue;
    if (o === null || typeof o !== 'object' || !Object.hasOwn(o, key)) return undefined;
    o = o[key];
  }
  return o;
}

const TARGETS = new RegExp(`^(vars\\.${VAR_NUMBER}|ecc\\..+|ced|cdpd)$`);

/** The response mapping {"vars.1": "accountId", "ecc.user.tier": "tier"} -> answer object. */
function mapResponse(mapping, json) {
  const answer = { vars: {}, ecc: {} };
  for (const [target, source] of mapping) {
    const v = jsonPath(json, source);
    if (v === undefined || v === null) continue;
    if (target.startsWith('vars.')) answer.vars[target.slice(5)] = v;
    else if (target.startsWith('ecc.')) answer.ecc[target.slice(4)] = v;
    else answer[target] = v;
  }
  return answer;
}

module.exports = {
  PlaceholderError, queryJson, encodeSegment, parseTemplate, fillTemplate, jsonPath, mapResponse, TARGETS, VAR_KEY,
};
