'use strict';

// What a cached answer means, as a short hash: what its route sends (URL, method, headers, body,
// auth) and how it reads the answer (mapping, errorPath, statuses...). It is part of every cache
// key (backend/cache.js), so an answer cached under one meaning never answers under another: a
// reload that changes a route's URL or mapping starts that route's cache afresh, and two
// deployments sharing one Redis share only answers of the same request read the same way.
//
// Computed once per route when the configuration is compiled, from the route as the user wrote
// it (the schema checked it): every key counts except those that only say when or whether a
// request is sent. A key added to routes later counts without being listed here; one that does
// not change what is asked belongs in NOT_MEANING (forgetting it costs a cache refill on a reload
// that changes it, never a wrong answer). Secrets never enter the hash: a credential's value is
// replaced by a mark, and values from the environment (${NAME}) and files count as written, not
// as read, so rotating a key keeps the cache and a hash in Redis reveals nothing about it.

const crypto = require('node:crypto');
const fs = require('node:fs');
const { ROUTE_KIND } = require('../route-kinds');

/** Route keys that say when or whether a request is sent, or what to do when it fails: not what an answer means. */
const NOT_MEANING = new Set(['timeoutMs', 'idempotent', 'fallback', 'cache', 'breaker', 'shadow', 'canary']);
/** A header whose value is a credential (a key, a token, a session): its name counts, its value does not. */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|key|token|secret|passw|signature|session/i;
/** auth's keys that hold or name a secret. */
const SECRET_KEY = /secret|passw|^token(file)?$/i;
const SECRET = '(secret)';

/** JSON with every object's keys in order, undefined left out: the same settings give the same text. */
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** headers as the meaning sees them: names in lower case, credentials' values marked. */
function headersMeaning(headers) {
  if (headers === null || typeof headers !== 'object') return headers;
  const out = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = CREDENTIAL_HEADER.test(name) ? SECRET : value;
  return out;
}

/** headerFiles: their values are secrets by definition; only the names count. */
const fileHeaderNames = (files) => (files && typeof files === 'object' ? Object.keys(files).map((n) => n.toLowerCase()).sort() : files);

function authMeaning(auth) {
  if (auth === null || typeof auth !== 'object') return auth;
  const out = {};
  for (const [k, v] of Object.entries(auth)) out[k] = SECRET_KEY.test(k) ? SECRET : v;
  return out;
}

/** A route (or the backend section) with what is no meaning left out and its secrets marked. */
function requestMeaning(settings) {
  const out = {};
  for (const [k, v] of Object.entries(settings || {})) {
    if (NOT_MEANING.has(k)) continue;
    if (k === 'headers') out[k] = headersMeaning(v);
    else if (k === 'headerFiles') out[k] = fileHeaderNames(v);
    else if (k === 'auth') out[k] = authMeaning(v);
    else out[k] = v;
  }
  return out;
}

/** A file's bytes as a hash, '' for a file that cannot be read (it was just loaded, so that is a race). */
function fileHash(file) {
  try {
    return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  } catch {
    return '';
  }
}

/**
 * The fingerprint (16 hex digits) of a route of `kind` (ROUTE_KIND; null for
 * queries no route names, which take the default contract). route: as the user wrote it ({} for
 * none); backend: the config's backend section (its headers and auth go with requests, its url
 * is the default contract's); files: for a module route, the handler's files (its code is its
 * request and mapping).
 */
function routeFingerprint(kind, route, backend, files = []) {
  const own = requestMeaning(route);
  const shared = requestMeaning({ headers: backend.headers, headerFiles: backend.headerFiles, auth: backend.auth });
  if (kind === null || kind === ROUTE_KIND.CONTRACT) {
    // The default contract's request and reading are the backend section's.
    Object.assign(shared, { url: backend.url, statuses: backend.statuses, errorPath: backend.errorPath });
  }
  const meaning = {
    kind: kind || ROUTE_KIND.CONTRACT, route: own, backend: shared, code: files.map(fileHash),
  };
  return crypto.createHash('sha256').update(canonical(meaning)).digest('hex').slice(0, 16);
}

/**
 * The prefix of a route's cache keys: its cache's namespace, if any, and its fingerprint. null
 * when the route keeps no cache.
 */
function cacheScope(cache, fingerprint) {
  if (!cache) return null;
  return cache.namespace === null || cache.namespace === undefined ? `${fingerprint}:` : `${cache.namespace}:${fingerprint}:`;
}

module.exports = { routeFingerprint, cacheScope, canonical };
