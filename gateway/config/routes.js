'use strict';

// How a query reaches the backend. The default contract is POST {backend}/query/{subtype} with
// the query as JSON; a per-subtype route in the config maps a query onto any REST call (method,
// URL template, headers, response mapping) or onto a JS module the user names.

const path = require('node:path');
const { closest } = require('../../lib/closest');
const { CODES } = require('../../lib/errors');
const {
  CACHE_DEFAULTS, BREAKER_DEFAULTS, compileFallback, compileCache, compileBreaker,
} = require('./availability');

const DEFAULT_AVAILABILITY = Object.freeze({ fallback: null, cache: null, breaker: BREAKER_DEFAULTS });

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

/**
 * A placeholder value that would change the URL's shape: empty (the segment vanishes), "." or ".."
 * (URL normalisation, in the WHATWG parser axios uses, resolves even their escaped forms %2E and
 * %2E%2E, climbing the path). The query fails with E_AG_HOST_ERROR2 instead of reaching the backend.
 */
class PlaceholderError extends Error {
  constructor(key, value) {
    super(`${key} is ${value === '' ? 'empty' : `'${value}'`}, which cannot be a URL path segment`);
    this.name = 'PlaceholderError';
    this.code = CODES.PLACEHOLDER;
    this.key = key;
  }
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
  if (!m) throw new Error(`url '${template}' must start with http:// or https:// and a host`);
  const [, origin, rest] = m;
  if (origin.includes('{')) throw new Error('placeholders are allowed in the path and query only, never in the host');
  const parts = [];
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  let match;
  while ((match = re.exec(rest)) !== null) {
    const key = match[1];
    if (!PLACEHOLDER_FIELDS.has(key) && !/^vars\.([1-9]|10)$/.test(key) && !/^ecc\.[^{}]+$/.test(key)) {
      throw new Error(`unknown placeholder {${key}}`);
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

/** Header values may name environment variables as ${NAME}: secrets stay out of the file. */
function resolveHeaders(headers, env = process.env) {
  const out = {};
  for (const [name, value] of Object.entries(headers || {})) {
    if (typeof value !== 'string') throw new Error(`header ${name} must be a string`);
    out[name.toLowerCase()] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, v) => {
      if (env[v] === undefined) throw new Error(`header ${name} names environment variable ${v}, which is not set`);
      return env[v];
    });
    if (/[\r\n]/.test(out[name.toLowerCase()])) throw new Error(`header ${name} contains a line break`);
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

const TARGETS = /^(vars\.([1-9]|10)|ecc\..+|ced|cdpd)$/;

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

// Every route may set its own fallback, cache and breaker (the route's value wins over the top level's).
const AVAILABILITY_KEYS = ['fallback', 'cache', 'breaker'];
const HTTP_ROUTE_KEYS = new Set(['method', 'url', 'headers', 'timeoutMs', 'response', 'errorPath', 'body', ...AVAILABILITY_KEYS]);
const MODULE_ROUTE_KEYS = new Set(['module', ...AVAILABILITY_KEYS]); // a module gets the query's deadline as an AbortSignal
const CONTRACT_ROUTE_KEYS = new Set(AVAILABILITY_KEYS); // no url or module: the default contract, with its own settings

/** The route's fallback, cache and breaker: its own where it sets them, else the top level's. */
function routeAvailability(route, top) {
  const own = (k) => Object.hasOwn(route, k);
  return {
    fallback: own('fallback') ? compileFallback(route.fallback, 'fallback') : top.fallback,
    cache: own('cache') ? compileCache(route.cache, 'cache', top.cache || CACHE_DEFAULTS) : top.cache,
    breaker: own('breaker') ? compileBreaker(route.breaker, 'breaker', top.breaker) : top.breaker,
  };
}

function compileRoute(route, { baseDir, deadlineMs, availability = DEFAULT_AVAILABILITY }) {
  if (route === null || typeof route !== 'object' || Array.isArray(route)) throw new Error('must be an object');
  let allowed = HTTP_ROUTE_KEYS;
  if (route.module !== undefined) allowed = MODULE_ROUTE_KEYS;
  else if (route.url === undefined && Object.keys(route).every((k) => CONTRACT_ROUTE_KEYS.has(k))) allowed = CONTRACT_ROUTE_KEYS;
  for (const key of Object.keys(route)) {
    if (allowed.has(key)) continue;
    const guess = closest(key, allowed);
    throw new Error(`unknown key '${key}'${guess ? ` (did you mean '${guess}'?)` : ''}`);
  }
  // A route may answer sooner than the query deadline, never later.
  const timeoutMs = route.timeoutMs === undefined ? deadlineMs : route.timeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new Error('timeoutMs must be a positive integer');
  const settings = routeAvailability(route, availability);
  if (allowed === CONTRACT_ROUTE_KEYS) return { kind: 'contract', ...settings };
  if (route.module !== undefined) {
    if (typeof route.module !== 'string') throw new Error('module must be a path');
    const file = path.resolve(baseDir, route.module);
    let handler;
    try {
      handler = require(file);
    } catch (err) {
      // One line: Node's MODULE_NOT_FOUND message goes on with a "Require stack:" list.
      throw new Error(`cannot load module ${file}: ${String(err.message).split('\n')[0]}`, { cause: err });
    }
    if (typeof handler !== 'function' && typeof (handler && handler.handle) !== 'function') {
      throw new Error(`module ${file} must export a function (query, {signal}) or {handle}`);
    }
    return {
      kind: 'module', handle: typeof handler === 'function' ? handler : handler.handle.bind(handler), file, ...settings,
    };
  }
  const method = (route.method || 'GET').toUpperCase();
  if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) throw new Error(`method ${route.method} is not supported`);
  if (typeof route.url !== 'string') throw new Error('url is required');
  const template = parseTemplate(route.url);
  const mapping = Object.entries(route.response || {});
  for (const [target, source] of mapping) {
    if (!TARGETS.test(target)) throw new Error(`response target '${target}' must be vars.1..vars.10, ecc.NAME, ced or cdpd`);
    if (typeof source !== 'string') throw new Error(`response.${target} must be a JSON path string`);
  }
  return {
    kind: 'http',
    method,
    template,
    headers: resolveHeaders(route.headers),
    timeoutMs: Math.min(timeoutMs, deadlineMs),
    mapping: mapping.length > 0 ? mapping : null,
    errorPath: route.errorPath || 'error',
    sendBody: route.body === 'query' || (route.body === undefined && method !== 'GET' && method !== 'DELETE'),
    ...settings,
  };
}

module.exports = {
  PlaceholderError, queryJson, encodeSegment, parseTemplate, fillTemplate, jsonPath, mapResponse, compileRoute,
};
