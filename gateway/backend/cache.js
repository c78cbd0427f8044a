'use strict';

// Backend answers kept for a while (lru-cache in the process; optionally Redis, shared by the
// gateway hosts of sides A and B: redis-store.js). A fresh entry (younger than ttlMs) answers a
// query without the backend; an older one, younger than ttlMs + staleIfErrorMs, answers only when
// the backend fails. An outage of the shared store never fails a query.
//
// Keys: a route's cache scope (its namespace and fingerprint, config/fingerprint.js: what the route
// asks and how it reads the answer) and the query's key fields. An answer cached under one
// meaning of a route never answers under another.
//
// Ages never read the wall clock, which steps (NTP, a VM resumed, an operator) and differs between
// hosts. In the process an entry's age is on the monotonic clock (performance.now, as lru-cache's
// own TTLs). In Redis an entry is stored with PX = ttlMs + staleIfErrorMs and its value says that
// length (keepMs); whoever reads it asks Redis what is left (PTTL, with the value, atomically), and
// its age is keepMs - left: Redis's own clock, the same for every host, decides. A host whose
// clock is behind or ahead reads the same age as the one that stored it.
//
// What is kept is the form `keep` gives: the gateway hands the cache answer/'s keptAnswer, the
// answer as it will be sent (values cut to the tag limits, ECC entries dropped until it fits one
// frame), never the backend's whole body: a 35 KB backend answer is kept as at most
// limits.maxMessageLength bytes. This module knows nothing of GED-145. The process's copy is bounded by
// cache.maxBytes as well as cache.maxEntries. A value read from Redis is checked (an object with
// an answer object and a keepMs, under a key that expires) before it is used; a bad one is
// deleted there, logged, and the query goes to the backend, whose answer takes its place.

const crypto = require('node:crypto');
// The global performance (not perf_hooks') so that a test's fake clock reaches it.
const { LRUCache } = require('lru-cache');
const { LogThrottle } = require('../log-throttle');
const { channels } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');
const { isObject } = require('../objects');
const { fieldValue } = require('../../lib/query-fields');
const { RedisStore } = require('./redis-store');

/** Keys in the shared store; their values are {answer, keepMs}: another shape needs another prefix. */
const KEY_PREFIX = 'ged145:answer:';
/**
 * What an entry costs in the heap besides its answer's JSON text: the entry object and the
 * cache's node, and per property of the answer its slot and string header (measured: 4,000
 * fitted answers took 1.25 times their JSON length without the per-property part).
 */
const ENTRY_OVERHEAD = 200;
const PROPERTY_OVERHEAD = 48;

/** An entry's size for cache.maxBytes: its key, its JSON, and what its objects cost. */
function entryBytes(key, json, answer) {
  let properties = 5;
  if (answer.vars) properties += Object.keys(answer.vars).length;
  if (answer.ecc) properties += Object.keys(answer.ecc).length;
  if (answer.eccArrays) properties += 4 * answer.eccArrays.length;
  return ENTRY_OVERHEAD + 2 * key.length + json.length + PROPERTY_OVERHEAD * properties;
}

/**
 * The cache key of q under the field names `fields`, or null when one of them is missing or empty
 * in q (such a query bypasses the cache: two callers with no CLID are not one caller). The route
 * (subtype) is always part of the key, whatever `fields` says: one route's answer never answers
 * another. JSON, so no two different queries share one. scope: the route's cache scope (its
 * namespace and fingerprint, config/fingerprint.js), computed once when the route was compiled.
 */
function cacheKey(q, fields, scope = '') {
  const parts = [q.subtype ?? null];
  for (const f of fields) {
    if (f === 'subtype') continue;
    const v = fieldValue(q, f);
    if (v === undefined || v === null || v === '') return null;
    parts.push(v);
  }
  return scope + JSON.stringify(parts);
}

/** A value read from the shared store that can be used as an entry: {answer, keepMs}, under a key that expires. */
function isStored(v, pttl) {
  return isObject(v) && isObject(v.answer) && Number.isSafeInteger(v.keepMs) && v.keepMs > 0 && pttl >= 0;
}

class AnswerCache {
  /**
   * settings: {maxEntries, maxBytes, store}; ttl and staleness are per lookup (a route may have
   * its own). keep(answer): the form an answer is kept in, or null when it cannot be kept
   * (answer/writer.js keptAnswer, given by the gateway); the whole answer when left out.
   * redact: log.redact, under which a key (it holds the caller's CLID) is logged only as a hash.
   * owner: what its diagnostics messages carry as `gateway` (diagnostics.js).
   */
  constructor(settings, {
    log = SILENT_LOG, owner = null, keep = (answer) => answer, redact = false,
  } = {}) {
    this.log = log;
    this.redact = redact;
    this.owner = owner;
    this.throttle = new LogThrottle();
    this.maxBytes = settings.maxBytes;
    this.local = new LRUCache({ max: settings.maxEntries, maxSize: settings.maxBytes, sizeCalculation: (entry) => entry.bytes });
    this.keep = keep;
    this.store = settings.store ? new RedisStore(settings.store, { log, owner }) : null;
  }

  /**
   * {entry, json} for answer kept keepMs from storedAt (performance.now() time): the entry holds
   * the kept form as fresh strings (parsed back from its JSON, where a value cut to its tag limit
   * would be a slice keeping the backend's whole string alive) and its size for cache.maxBytes;
   * json is the shared store's value. null when it cannot be kept.
   */
  entry(key, answer, storedAt, keepMs) {
    const kept = this.keep(answer);
    if (kept === null) return null;
    const json = JSON.stringify({ answer: kept, keepMs });
    const entry = JSON.parse(json);
    entry.storedAt = storedAt;
    entry.bytes = entryBytes(key, json, entry.answer);
    return { entry, json };
  }

  /**
   * The entry for key ({answer, storedAt}, storedAt on performance.now()'s clock) or undefined: the
   * local cache first, then the shared store; keepMs: how long after storedAt an entry is still of
   * use. Never rejects.
   */
  async get(key, keepMs) {
    const local = this.local.get(key);
    if (local !== undefined || this.store === null) return local;
    const got = await this.store.read(KEY_PREFIX + key);
    if (got === undefined || got === null || got[0] === null) return undefined;
    const [text, pttl] = got;
    let value;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!isStored(value, pttl)) {
      this.badValue(key);
      return undefined;
    }
    const age = Math.max(0, value.keepMs - pttl); // on Redis's clock: the same for every host
    const left = Math.min(pttl, keepMs - age); // this host's settings may keep it for less than its writer's
    if (left <= 0) return undefined;
    const made = this.entry(key, value.answer, performance.now() - age, value.keepMs); // written by another host, maybe another version
    if (made === null) return undefined;
    this.local.set(key, made.entry, { ttl: left }); // kept in the process for what is left of its time
    return made.entry;
  }

  /** A value in the shared store that is no entry: deleted there (this host answers from the backend), logged. */
  badValue(key) {
    if (channels.cacheStoreError.hasSubscribers) channels.cacheStoreError.publish({ gateway: this.owner, what: 'bad_value', error: null });
    const n = this.throttle.hit('redis-bad-value');
    if (n) {
      this.log.warn('cache store (Redis) held a value that is no cached answer; ignored and deleted, the query goes to the backend', {
        key: this.redact ? `${KEY_PREFIX}sha256:${crypto.createHash('sha256').update(key).digest('hex').slice(0, 16)}` : KEY_PREFIX + key, count: n,
      });
    }
    this.store.remove(KEY_PREFIX + key);
  }

  /** Stores answer, in its kept form, under key for keepMs (ttl + stale); the shared store is written in the background. */
  set(key, answer, keepMs) {
    const made = this.entry(key, answer, performance.now(), keepMs);
    if (made === null) return;
    this.local.set(key, made.entry, { ttl: keepMs });
    if (this.store !== null) this.store.write(KEY_PREFIX + key, made.json, keepMs);
  }

  toJSON() {
    return {
      entries: this.local.size,
      bytes: this.local.calculatedSize,
      maxBytes: this.maxBytes,
      store: this.store === null ? null : this.store.state,
    };
  }

  async close() {
    if (this.store !== null) this.store.close();
  }
}

module.exports = { AnswerCache, cacheKey, KEY_PREFIX };
