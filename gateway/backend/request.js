'use strict';

// A query as an HTTP request, and an HTTP answer as a GED-145 answer: the default contract's JSON
// body, URL templates and their placeholders, header values from the environment, JSON paths and
// the response mapping, for each query (backend.js). A route's template is parsed once, at load,
// by config/routes.js.

const { PlaceholderError } = require('../../lib/errors');
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
  PlaceholderError, queryJson, encodeSegment, fillTemplate, jsonPath, mapResponse,
};
