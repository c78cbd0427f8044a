'use strict';

// The answer cache in the chain: a fresh cached answer (cache.ttlMs) answers without the backend;
// one past its ttlMs but within staleIfErrorMs is kept as the query's substitute (substitutes.js)
// for when the backend fails; a backend's ok answer is stored. Each lookup is published
// (ged145:cache:lookup: hit, miss, bypass; stale is published where it is used).

const { performance } = require('node:perf_hooks');
const { cacheKey } = require('../cache');
const { KIND, ok } = require('../outcome');
const { channels } = require('../diagnostics');

class Cache {
  /** cache: the AnswerCache (null: no route caches); owner: the channels' `gateway`. */
  constructor(next, { cache, owner }) {
    this.next = next;
    this.cache = cache;
    this.owner = owner;
  }

  dispatch(ctx) {
    const { substitutes } = ctx;
    if (this.cache === null || substitutes === null || !substitutes.cache) return this.next.dispatch(ctx);
    return this.cached(ctx, substitutes);
  }

  async cached(ctx, s) {
    const q = ctx.query;
    const keepMs = s.cache.ttlMs + s.cache.staleIfErrorMs;
    const key = cacheKey(q, s.cache.key, s.cacheScope);
    if (key === null) {
      this.count('bypass', q); // a key field missing or empty
    } else {
      const entry = await this.cache.get(key, keepMs);
      if (entry !== undefined) {
        const age = performance.now() - entry.storedAt; // monotonic: a clock step changes no age
        if (age <= s.cache.ttlMs) {
          this.count('hit', q);
          return ok(entry.answer, 'cache');
        }
        if (age <= keepMs) s.keepStale(entry.answer);
      }
      this.count('miss', q);
    }
    const outcome = await this.next.dispatch(ctx);
    if (outcome.kind === KIND.OK && key !== null) this.cache.set(key, outcome.answer, keepMs);
    return outcome;
  }

  /** A cache lookup's result, for the channel's subscribers. */
  count(result, query) {
    if (channels.cacheLookup.hasSubscribers) channels.cacheLookup.publish({ gateway: this.owner, query, result });
  }
}

module.exports = { Cache };
