'use strict';

// From a query to an outcome, keeping calls routing while the backend degrades:
//   1. a fresh cached answer (cache.ttlMs) answers without the backend;
//   2. otherwise the backend (with its breakers, origins and retry: backend.js);
//   3. when the backend fails (5xx, 429, unreachable, reset, invalid answer, an open circuit, a
//      pause the origin asked for or the rate learnt from its 429s, the deadline),
//      a stale cached answer (younger than ttlMs + staleIfErrorMs), else the fallback
//      answer, else the failure itself (E_AG_HOST_ERROR1). The API's own 4xx (backend/statuses.js)
//      stays E_AG_HOST_ERROR2 unless
//      fallback.on4xx. Each setting may be a route's own (routes.<subtype>.fallback, .cache).
// Outcomes carry `source` ('cache', 'stale', 'fallback') so the session counts them apart.

const { performance } = require('node:perf_hooks');
const { Backend } = require('./backend');
const { AnswerCache, cacheKey } = require('./cache');
const { KIND, REASON, ok } = require('./outcome');
const { Dispatcher } = require('./handle');
const { channels } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');

class QueryResolver extends Dispatcher {
  /**
   * cache: an AnswerCache to keep (a reload with the same cache settings keeps its entries);
   * previous: the resolver this one replaces (a reload), whose OAuth2 tokens the backend takes over;
   * keepAnswer: the form a new cache keeps an answer in (the gateway gives answer/'s keptAnswer);
   * faults: the gateway's record of its handler modules' errors (user-code.js), kept across reloads;
   * owner: what the backend's diagnostics messages carry as `gateway` (diagnostics.js).
   */
  constructor(config, {
    log = SILENT_LOG, owner = null, cache, previous = null, keepAnswer, faults = null,
  } = {}) {
    super();
    this.owner = owner;
    this.routes = config.compiledRoutes;
    const { availability } = config;
    this.top = { fallback: availability.fallback, cache: availability.cache, cacheScope: availability.cacheScope };
    // One cache for the process; its size and store come from the top level, or the first route that has one.
    const first = availability.cache || [...this.routes.values()].map((r) => r.cache).find(Boolean);
    const fallback = availability.fallback || [...this.routes.values()].some((r) => r.fallback);
    this.backend = new Backend(config, {
      log, owner, instead: insteadText(Boolean(first), Boolean(fallback)), previous: previous === null ? null : previous.backend, faults,
    });
    if (!first) this.cache = null;
    else {
      this.cache = cache || new AnswerCache(first, {
        log, owner, keep: keepAnswer, redact: config.log.redact,
      });
    }
  }

  /** The fallback and cache settings (and cache scope) that apply to q: its route's, else the top level's. */
  settingsFor(q) {
    const route = q.subtype === undefined ? undefined : this.routes.get(q.subtype);
    return route === undefined ? this.top : route;
  }

  /**
   * A promise of the backend's outcome for a handle's query; a stale answer met on the way is kept
   * on the handle, which asks instead() for the substitute of a failed outcome in its own
   * continuation (handle.js), one promise hop fewer on every query's path.
   */
  resolve(h) {
    if (!h.settings.cache || this.cache === null) return this.backend.call(h.query, h.signal, h.deadlineAt);
    return this.resolveCached(h);
  }

  /** resolve() for a query whose route caches answers. */
  async resolveCached(h) {
    const q = h.query;
    const s = h.settings;
    const key = cacheKey(q, s.cache.key, s.cacheScope);
    if (key === null) {
      this.count('bypass', q); // a key field missing or empty
    } else {
      const entry = await this.cache.get(key, s.cache.ttlMs + s.cache.staleIfErrorMs);
      if (entry !== undefined) {
        const age = performance.now() - entry.storedAt; // monotonic: a clock step changes no age
        if (age <= s.cache.ttlMs) {
          this.count('hit', q);
          return ok(entry.answer, 'cache');
        }
        if (age <= s.cache.ttlMs + s.cache.staleIfErrorMs) h.stale = entry.answer;
      }
      this.count('miss', q);
    }
    const outcome = await this.backend.call(q, h.signal, h.deadlineAt);
    if (outcome.kind === KIND.OK && key !== null) this.cache.set(key, outcome.answer, s.cache.ttlMs + s.cache.staleIfErrorMs);
    return outcome;
  }

  /** A stale or fallback outcome in place of a failed one, or null when there is none (or it is no failure of the backend). */
  instead(outcome, h) {
    if (outcome.reason === REASON.ABORTED) return null;
    const { fallback } = h.settings;
    if (outcome.kind === KIND.APP_ERROR && !(fallback && fallback.on4xx)) return null;
    if (h.stale !== undefined) {
      this.count('stale', h.query);
      return ok(h.stale, 'stale');
    }
    if (fallback) return ok(fallback.answer, 'fallback');
    return null;
  }

  /** A cache lookup's result (hit, miss, stale, bypass), for the channel's subscribers. */
  count(result, query) {
    if (channels.cacheLookup.hasSubscribers) channels.cacheLookup.publish({ gateway: this.owner, query, result });
  }

  /** The backend's health now (its lanes: health.js), for ged145_backend_up. */
  health() {
    return this.backend.health;
  }

  /** Per origin with a circuit, its least healthy state (breakers.js), for ged145_backend_circuit_state. */
  circuitStates() {
    return this.backend.breakers.states();
  }

  /** {entries, bytes, store} of the answer cache, or null without one. */
  cacheFigures() {
    return this.cache === null ? null : this.cache.toJSON();
  }

  toJSON() {
    const { backend } = this;
    return {
      ...backend.health.toJSON(),
      circuits: backend.breakers.toJSON(),
      pacing: backend.breakers.pacingJSON(),
      ...backend.toJSON(),
      cache: this.cache === null ? null : this.cache.toJSON(),
    };
  }

  async close({ keepCache = false } = {}) {
    if (this.cache !== null && !keepCache) await this.cache.close();
    await this.backend.close();
  }
}

/** What the router gets while the backend fails, as the health's log line says it. */
function insteadText(cache, fallback) {
  if (cache && fallback) return 'a stale cached answer where there is one, else the fallback answer';
  if (cache) return 'a stale cached answer where there is one, else E_AG_HOST_ERROR1';
  if (fallback) return 'the fallback answer';
  return 'E_AG_HOST_ERROR1';
}

module.exports = { QueryResolver };
