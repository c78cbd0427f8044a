'use strict';

// Backend answers kept for a while (lru-cache in the process; optionally Redis, shared by the
// gateway hosts of sides A and B). A fresh entry (younger than ttlMs) answers a query without the
// backend; an older one, younger than ttlMs + staleIfErrorMs, answers only when the backend fails.
// The Redis store is best effort: it is asked with a short time limit, and an outage never fails
// a query (it is logged, counted, and the query goes to the backend).
//
// What is kept is the form `keep` gives: the gateway hands the cache answer/'s keptAnswer, the
// answer as it will be sent (values cut to the tag limits, ECC entries dropped until it fits one
// frame), never the backend's whole body: a 35 KB backend answer is kept as at most
// limits.maxMessageLength bytes. This module knows nothing of GED-145. The process's copy is bounded by
// cache.maxBytes as well as cache.maxEntries. A value read from Redis is checked (an object with
// an answer object and a storedAt not in the future) before it is used; a bad one is deleted
// there, logged, and the query goes to the backend, whose answer takes its place.

const crypto = require('node:crypto');
const { LRUCache } = require('lru-cache');
const { LogThrottle } = require('../../lib/log-throttle');
const { isObject } = require('../../lib/objects');
const { fieldValue } = require('../../lib/query-fields');

const REDIS_TIMEOUT_MS = 25; // a Redis answer later than this is not worth the router's deadline
const KEY_PREFIX = 'ged145:answer:';
/** A storedAt this far ahead of our clock is a clock set wrong elsewhere, not an answer from the future. */
const CLOCK_SKEW_MS = 5000;
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
 * another. JSON, so no two different queries share one.
 */
function cacheKey(q, fields) {
  const parts = [q.subtype ?? null];
  for (const f of fields) {
    if (f === 'subtype') continue;
    const v = fieldValue(q, f);
    if (v === undefined || v === null || v === '') return null;
    parts.push(v);
  }
  return JSON.stringify(parts);
}

/** A value read from the shared store that can be used as an entry, at `now`. */
function isEntry(e, now) {
  return isObject(e) && isObject(e.answer) && Number.isFinite(e.storedAt) && e.storedAt > 0 && e.storedAt <= now + CLOCK_SKEW_MS;
}

class AnswerCache {
  /**
   * settings: {maxEntries, maxBytes, store}; ttl and staleness are per lookup (a route may have
   * its own). keep(answer): the form an answer is kept in, or null when it cannot be kept
   * (answer/writer.js keptAnswer, given by the gateway); the whole answer when left out.
   */
  /** redact: log.redact, under which a key (it holds the caller's CLID) is logged only as a hash. */
  constructor(settings, {
    log, metrics, keep = (answer) => answer, redact = false,
  } = {}) {
    this.log = log;
    this.redact = redact;
    this.metrics = metrics;
    this.throttle = new LogThrottle();
    this.maxBytes = settings.maxBytes;
    this.local = new LRUCache({ max: settings.maxEntries, maxSize: settings.maxBytes, sizeCalculation: (entry) => entry.bytes });
    this.keep = keep;
    this.redis = null;
    if (settings.store) this.connectRedis(settings.store);
  }

  /**
   * {entry, json} for answer stored at storedAt: the entry holds the kept form as fresh strings
   * (parsed back from its JSON, where a value cut to its tag limit would be a slice keeping the
   * backend's whole string alive) and its size for cache.maxBytes; null when it cannot be kept.
   */
  entry(key, answer, storedAt) {
    const kept = this.keep(answer);
    if (kept === null) return null;
    const json = JSON.stringify({ answer: kept, storedAt });
    const entry = JSON.parse(json);
    entry.bytes = entryBytes(key, json, entry.answer);
    return { entry, json };
  }

  connectRedis(url) {
    const Redis = require('ioredis'); // only when a shared store is configured
    this.redis = new Redis(url, {
      lazyConnect: false,
      enableOfflineQueue: false, // a command while disconnected fails at once: the query goes on without it
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
      commandTimeout: REDIS_TIMEOUT_MS * 4,
      retryStrategy: (times) => Math.min(times * 200, 2000), // keep reconnecting in the background
    });
    this.redisUp = null;
    this.redis.on('ready', () => this.redisState(true));
    this.redis.on('error', (err) => this.redisError(err));
    this.redis.on('end', () => this.redisState(false));
  }

  redisState(up, why) {
    if (this.redisUp === up) return;
    this.redisUp = up;
    if (!this.log) return;
    if (up) this.log.info('cache store (Redis) connected');
    else this.log.warn(`cache store (Redis) unreachable${why ? `: ${why}` : ''}; queries go on with the local cache and the backend`);
  }

  redisError(err) {
    if (this.metrics) this.metrics.cacheStoreErrors.inc();
    this.redisState(false, err.code || err.message);
  }

  /**
   * The entry for key ({answer, storedAt}) or undefined: the local cache first, then the shared
   * store (within REDIS_TIMEOUT_MS); keepMs: how long after storedAt an entry is still of use.
   * Never rejects.
   */
  async get(key, keepMs) {
    const local = this.local.get(key);
    if (local !== undefined || this.redis === null || this.redisUp !== true) return local;
    let timer;
    try {
      const text = await Promise.race([
        this.redis.get(KEY_PREFIX + key),
        new Promise((resolve) => { timer = setTimeout(resolve, REDIS_TIMEOUT_MS, undefined); }),
      ]);
      if (typeof text !== 'string') return undefined;
      let entry;
      try {
        entry = JSON.parse(text);
      } catch {
        entry = undefined;
      }
      if (!isEntry(entry, Date.now())) {
        this.badValue(key);
        return undefined;
      }
      const made = this.entry(key, entry.answer, entry.storedAt); // written by another host, maybe another version
      if (made === null) return undefined;
      // Kept in the process for what is left of its time.
      const ttl = Math.floor(entry.storedAt + keepMs - Date.now());
      if (ttl > 0) this.local.set(key, made.entry, { ttl });
      return made.entry;
    } catch (err) {
      if (this.metrics) this.metrics.cacheStoreErrors.inc();
      const n = this.throttle.hit('redis-get');
      if (n && this.log) this.log.warn(`cache store (Redis) read failed: ${err.message}`, { count: n });
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A value in the shared store that is no entry: deleted there (this host answers from the backend), logged. */
  badValue(key) {
    if (this.metrics) this.metrics.cacheStoreErrors.inc();
    const n = this.throttle.hit('redis-bad-value');
    if (n && this.log) {
      this.log.warn('cache store (Redis) held a value that is no cached answer; ignored and deleted, the query goes to the backend', {
        key: this.redact ? `${KEY_PREFIX}sha256:${crypto.createHash('sha256').update(key).digest('hex').slice(0, 16)}` : KEY_PREFIX + key, count: n,
      });
    }
    this.redis.del(KEY_PREFIX + key).catch(() => {});
  }

  /** Stores answer, in its kept form, under key for ttl + stale (ms); the shared store is written in the background. */
  set(key, answer, keepMs) {
    const made = this.entry(key, answer, Date.now());
    if (made === null) return;
    const { entry, json } = made;
    this.local.set(key, entry, { ttl: keepMs });
    if (this.redis !== null && this.redisUp === true) {
      this.redis.set(KEY_PREFIX + key, json, 'PX', keepMs).catch((err) => {
        if (this.metrics) this.metrics.cacheStoreErrors.inc();
        const n = this.throttle.hit('redis-set');
        if (n && this.log) this.log.warn(`cache store (Redis) write failed: ${err.message}`, { count: n });
      });
    }
  }

  toJSON() {
    return {
      entries: this.local.size,
      bytes: this.local.calculatedSize,
      maxBytes: this.maxBytes,
      store: this.redis === null ? null : (this.redisUp ? 'connected' : 'unreachable'),
    };
  }

  async close() {
    if (this.redis !== null) this.redis.disconnect();
  }
}

module.exports = { AnswerCache, cacheKey };
