'use strict';

// What one query may be answered with instead of a failure of the backend: a stale cached answer
// met on the way (the cache layer keeps it here), else its route's fallback answer. Made per query
// under the settings it started with (a reload does not change them midway), and only for a route
// that has a cache or a fallback. The query is answered once, so its substitute is given once:
// at its deadline (handle.js) or for the backend's failure (layers/substitute.js), whichever asks first.

const { KIND, REASON, ok } = require('./outcome');
const { channels } = require('./diagnostics');

class Substitutes {
  /** settings: {fallback, cache, cacheScope}: the route's, else the top level's; owner: the channels' `gateway`. */
  constructor(settings, query, owner) {
    this.fallback = settings.fallback;
    this.cache = settings.cache;
    this.cacheScope = settings.cacheScope;
    this.query = query;
    this.owner = owner;
    this.stale = undefined; // a cached answer past its ttlMs, kept for when the backend fails
    this.given = false;
  }

  keepStale(answer) {
    this.stale = answer;
  }

  /** A stale or fallback outcome in place of a failed one, or null when there is none (or it is no failure of the backend). */
  forFailure(outcome) {
    if (this.given || outcome.reason === REASON.ABORTED) return null;
    const { fallback } = this;
    if (outcome.kind === KIND.APP_ERROR && !(fallback && fallback.on4xx)) return null;
    if (this.stale !== undefined) {
      this.given = true;
      if (channels.cacheLookup.hasSubscribers) channels.cacheLookup.publish({ gateway: this.owner, query: this.query, result: 'stale' });
      return ok(this.stale, 'stale');
    }
    if (!fallback) return null;
    this.given = true;
    return ok(fallback.answer, 'fallback');
  }
}

module.exports = { Substitutes };
