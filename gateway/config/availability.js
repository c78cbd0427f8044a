'use strict';

// The settings that keep calls routing while the backend degrades: fallback, cache, breaker and
// retry (docs/configuration.md). Each is checked here once, for the top level and for a route
// (routes.<subtype>.fallback, .cache, .breaker), where the route's value wins.

const { isObject } = require('../../lib/objects');
const { isKeyName } = require('../backend/cache');

const CACHE_DEFAULTS = Object.freeze({
  ttlMs: 30_000, staleIfErrorMs: 3_600_000, maxEntries: 100_000, maxBytes: 64 * 1024 * 1024, key: ['subtype', 'clid'], store: null,
});
// Why these numbers: docs/configuration.md (availability) and gateway/backend/circuit.js.
const BREAKER_DEFAULTS = Object.freeze({
  enabled: true, failureRatio: 0.5, minimumCalls: 20, windowMs: 1000, halfOpenAfterMs: 500, maxHalfOpenAfterMs: 2000,
});
/** Breaker keys an earlier version took, and what replaced them. */
const RETIRED_BREAKER_KEYS = Object.freeze({
  consecutiveFailures: 'the circuit opens on a failure ratio (failureRatio, minimumCalls, windowMs; docs/configuration.md)',
});
const RETRY_DEFAULTS = Object.freeze({ enabled: true, minRemainingMs: 50 });
const FALLBACK_KEYS = new Set(['vars', 'ecc', 'eccArrays', 'ced', 'cdpd', 'on4xx']);

const intIn = (v, min, max) => Number.isInteger(v) && v >= min && v <= max;

function unknownKeys(obj, allowed, where) {
  for (const k of Object.keys(obj)) if (!allowed.has(k)) throw new Error(`${where}: unknown key '${k}'`);
}

/** null, or {answer, on4xx}: the answer in the REST contract's response shape. */
function compileFallback(value, where = 'fallback') {
  if (value === null || value === undefined || value === false) return null;
  if (!isObject(value)) throw new Error(`${where} must be an answer object {"vars": {...}, "ecc": {...}} or null`);
  unknownKeys(value, FALLBACK_KEYS, where);
  if (value.vars !== undefined) {
    if (!isObject(value.vars)) throw new Error(`${where}.vars must be an object`);
    for (const k of Object.keys(value.vars)) if (!/^([1-9]|10)$/.test(k)) throw new Error(`${where}.vars.${k}: peripheral variables are 1..10`);
  }
  if (value.ecc !== undefined && !isObject(value.ecc)) throw new Error(`${where}.ecc must be an object`);
  if (value.eccArrays !== undefined && !Array.isArray(value.eccArrays)) throw new Error(`${where}.eccArrays must be a list`);
  if (value.on4xx !== undefined && typeof value.on4xx !== 'boolean') throw new Error(`${where}.on4xx must be true or false`);
  const { on4xx = false, ...answer } = value;
  return { answer, on4xx };
}

/** null (off), or the cache settings with defaults filled in; `base` is the top level's for a route. */
function compileCache(value, where = 'cache', base = CACHE_DEFAULTS) {
  if (value === null || value === undefined || value === false) return null;
  if (value === true) return { ...base };
  if (!isObject(value)) throw new Error(`${where} must be an object or null`);
  unknownKeys(value, new Set(Object.keys(CACHE_DEFAULTS)), where);
  const c = { ...base, ...value };
  if (!intIn(c.ttlMs, 1, 86_400_000)) throw new Error(`${where}.ttlMs must be an integer from 1 to 86400000`);
  if (!intIn(c.staleIfErrorMs, 0, 7 * 86_400_000)) throw new Error(`${where}.staleIfErrorMs must be an integer from 0 to 604800000`);
  if (!intIn(c.maxEntries, 1, 10_000_000)) throw new Error(`${where}.maxEntries must be an integer from 1 to 10000000`);
  if (!intIn(c.maxBytes, 65_536, 64 * 1024 * 1024 * 1024)) throw new Error(`${where}.maxBytes must be an integer from 65536 to 68719476736`);
  if (!Array.isArray(c.key) || c.key.length === 0 || !c.key.every((k) => typeof k === 'string' && isKeyName(k))) {
    throw new Error(`${where}.key must list request fields: subtype, clid, dn, ced, cdpd, routingClient, vars.N, ecc.NAME`);
  }
  if (c.store !== null && !(typeof c.store === 'string' && /^rediss?:\/\/[^/]+/.test(c.store))) {
    throw new Error(`${where}.store must be a redis://host:port URL or null`);
  }
  return c;
}

function compileBreaker(value, where = 'breaker', base = BREAKER_DEFAULTS) {
  if (value === false || value === null) return { ...base, enabled: false };
  if (value === undefined) return { ...base };
  if (!isObject(value)) throw new Error(`${where} must be an object`);
  for (const k of Object.keys(RETIRED_BREAKER_KEYS)) if (Object.hasOwn(value, k)) throw new Error(`${where}.${k} is gone: ${RETIRED_BREAKER_KEYS[k]}`);
  unknownKeys(value, new Set(Object.keys(BREAKER_DEFAULTS)), where);
  const b = { ...base, ...value };
  if (typeof b.enabled !== 'boolean') throw new Error(`${where}.enabled must be true or false`);
  if (!(typeof b.failureRatio === 'number' && b.failureRatio > 0 && b.failureRatio <= 1)) {
    throw new Error(`${where}.failureRatio must be a number above 0 and at most 1`);
  }
  if (!intIn(b.minimumCalls, 1, 100_000)) throw new Error(`${where}.minimumCalls must be an integer from 1 to 100000`);
  if (!intIn(b.windowMs, 100, 600_000)) throw new Error(`${where}.windowMs must be an integer from 100 to 600000`);
  if (!intIn(b.halfOpenAfterMs, 100, 600_000)) throw new Error(`${where}.halfOpenAfterMs must be an integer from 100 to 600000`);
  if (!intIn(b.maxHalfOpenAfterMs, b.halfOpenAfterMs, 3_600_000)) {
    throw new Error(`${where}.maxHalfOpenAfterMs must be an integer from halfOpenAfterMs (${b.halfOpenAfterMs}) to 3600000`);
  }
  return b;
}

function compileRetry(value, where = 'retry') {
  if (!isObject(value)) throw new Error(`${where} must be an object`);
  unknownKeys(value, new Set(Object.keys(RETRY_DEFAULTS)), where);
  const r = { ...RETRY_DEFAULTS, ...value };
  if (typeof r.enabled !== 'boolean') throw new Error(`${where}.enabled must be true or false`);
  if (!intIn(r.minRemainingMs, 0, 60_000)) throw new Error(`${where}.minRemainingMs must be an integer from 0 to 60000`);
  return r;
}

module.exports = {
  CACHE_DEFAULTS, BREAKER_DEFAULTS, RETIRED_BREAKER_KEYS, RETRY_DEFAULTS, compileFallback, compileCache, compileBreaker, compileRetry,
};
