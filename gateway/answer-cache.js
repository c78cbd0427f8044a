'use strict';

// Backend answers kept for a while (lru-cache in the process; optionally Redis, shared by the
// gateway hosts of sides A and B). A fresh entry (younger than ttlMs) answers a query without the
// backend; an older one, younger than ttlMs + staleIfErrorMs, answers only when the backend fails.
// The Redis store is best effort: it is asked with a short time limit, and an outage never fails
// a query (it is logged, counted, and the query goes to the backend).

const { LRUCache } = require('lru-cache');
const { LogThrottle } = require('./log-throttle');

const REDIS_TIMEOUT_MS = 25; // a Redis answer later than this is not worth the router's deadline
const KEY_PREFIX = 'ged145:answer:';

/** The request fields a cache key may name (docs/configuration.md, cache.key). */
function keyField(q, name) {
  if (name.startsWith('vars.')) return q.vars ? q.vars[name.slice(5)] : undefined;
  if (name.startsWith('ecc.')) return q.ecc ? q.ecc[name.slice(4)] : undefined;
  return q[name];
}
const KEY_FIELDS = new Set(['subtype', 'clid', 'dn', 'ced', 'cdpd', 'routingClient']);
const isKeyName = (name) => KEY_FIELDS.has(name) || /^vars\.([1-9]|10)$/.test(name) || /^ecc\..+$/.test(name);

/** The cache key of q under the field names `fields`: JSON, so no two different queries share one. */
function cacheKey(q, fields) {
  return JSON.stringify(fields.map((f) => keyField(q, f) ?? null));
}

class AnswerCache {
  /** settings: {maxEntries, store}; ttl and staleness are per lookup (a route may have its own). */
  constructor(settings, { log, metrics } = {}) {
    this.log = log;
    this.metrics = metrics;
    this.throttle = new LogThrottle();
    this.local = new LRUCache({ max: settings.maxEntries });
    this.redis = null;
    if (settings.store) this.connectRedis(settings.store);
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
   * store (within REDIS_TIMEOUT_MS). Never rejects.
   */
  async get(key) {
    const local = this.local.get(key);
    if (local !== undefined || this.redis === null || this.redisUp !== true) return local;
    let timer;
    try {
      const text = await Promise.race([
        this.redis.get(KEY_PREFIX + key),
        new Promise((resolve) => { timer = setTimeout(resolve, REDIS_TIMEOUT_MS, undefined); }),
      ]);
      if (typeof text !== 'string') return undefined;
      const entry = JSON.parse(text);
      this.local.set(key, entry);
      return entry;
    } catch (err) {
      if (this.metrics) this.metrics.cacheStoreErrors.inc();
      const n = this.throttle.hit('redis-get');
      if (n && this.log) this.log.warn(`cache store (Redis) read failed: ${err.message}`, { count: n });
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stores answer under key for ttl + stale (ms); the shared store is written in the background. */
  set(key, answer, keepMs) {
    const entry = { answer, storedAt: Date.now() };
    this.local.set(key, entry, { ttl: keepMs });
    if (this.redis !== null && this.redisUp === true) {
      this.redis.set(KEY_PREFIX + key, JSON.stringify(entry), 'PX', keepMs).catch((err) => {
        if (this.metrics) this.metrics.cacheStoreErrors.inc();
        const n = this.throttle.hit('redis-set');
        if (n && this.log) this.log.warn(`cache store (Redis) write failed: ${err.message}`, { count: n });
      });
    }
  }

  toJSON() {
    return { entries: this.local.size, store: this.redis === null ? null : (this.redisUp ? 'connected' : 'unreachable') };
  }

  async close() {
    if (this.redis !== null) this.redis.disconnect();
  }
}

module.exports = {
  AnswerCache, cacheKey, isKeyName, REDIS_TIMEOUT_MS,
};
