'use strict';

// The settings that keep calls routing while the backend degrades: fallback, cache, breaker and
// retry (docs/configuration.md), for the top level and for a route (routes.<subtype>.fallback,
// .cache, .breaker), where the route's value wins. Types and ranges are the schema's (schema.js,
// checked before these run); what is here is what a schema cannot say, and the compiled shapes.

const { isKeyField, KEY_FIELDS, listed } = require('../../lib/query-fields');
const { ConfigError } = require('../../lib/errors');
const { sectionDefaults } = require('./schema');

const CACHE_DEFAULTS = Object.freeze(sectionDefaults('cache'));
// Why these numbers: docs/configuration.md (availability) and gateway/backend/circuit.js.
const BREAKER_DEFAULTS = Object.freeze(sectionDefaults('breaker'));
const RETRY_DEFAULTS = Object.freeze(sectionDefaults('retry'));
const HEDGE_DEFAULTS = Object.freeze(sectionDefaults('backend.hedge'));

/** null, or {answer, on4xx}: the answer in the REST contract's response shape. */
function compileFallback(value) {
  if (value === null || value === undefined || value === false || value === true) return null;
  const { on4xx = false, ...answer } = value;
  return { answer, on4xx };
}

/** null (off), or the cache settings with defaults filled in; `base` is the top level's for a route. */
function compileCache(value, where = 'cache', base = CACHE_DEFAULTS) {
  if (value === null || value === undefined || value === false) return null;
  const c = value === true ? { ...base } : { ...base, ...value };
  if (!c.key.every((k) => isKeyField(k))) {
    throw new ConfigError(`${where}.key must list request fields: ${listed(KEY_FIELDS)}`);
  }
  return c;
}

function compileBreaker(value, where = 'breaker', base = BREAKER_DEFAULTS) {
  if (value === false || value === null) return { ...base, enabled: false };
  const b = value === undefined || value === true ? { ...base } : { ...base, ...value };
  if (b.maxHalfOpenAfterMs < b.halfOpenAfterMs) {
    throw new ConfigError(`${where}.maxHalfOpenAfterMs must be an integer from halfOpenAfterMs (${b.halfOpenAfterMs}) to 3600000`);
  }
  return b;
}

function compileRetry(value) {
  return { ...RETRY_DEFAULTS, ...value };
}

/** backend.hedge: null (off), or {afterMs, maxPercent} with defaults filled in; afterMs at most half of the deadline. */
function compileHedge(value, deadlineMs) {
  if (value === null || value === undefined || value === false) return null;
  const h = value === true ? { ...HEDGE_DEFAULTS } : { ...HEDGE_DEFAULTS, ...value };
  if (2 * h.afterMs > deadlineMs) {
    // A hedge goes only while afterMs of the deadline is left: past half of it, none ever would.
    throw new ConfigError(`backend.hedge.afterMs must be at most half of deadlineMs (${Math.floor(deadlineMs / 2)}): `
      + 'a hedge is sent only while afterMs of the deadline is left');
  }
  return h;
}

module.exports = {
  CACHE_DEFAULTS, BREAKER_DEFAULTS, compileFallback, compileCache, compileBreaker, compileRetry, compileHedge,
};
