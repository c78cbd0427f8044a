'use strict';

// How many hedged requests the backend may send: at most maxPercent of the queries sent to the
// default contract over the last WINDOW_MS, as Envoy's retry budget caps retries at a share of the
// requests. A hedge is extra load on a backend that is already slow; when every query is slow
// (an origin that has slowed down for all of them, not for a few), hedging them all would double
// the load at the worst moment. Counted in one-second slots, so that the share follows the
// traffic of the last ten seconds and a burst long past spends nothing of it.
//
// MIN_HEDGES are allowed in any window whatever the share: a quiet gateway (a few queries a
// second) would otherwise never hedge its first slow queries, and three hedges in ten seconds
// load nothing.

const { performance } = require('node:perf_hooks');

const SLOT_MS = 1000;
const SLOTS = 10;
const WINDOW_MS = SLOT_MS * SLOTS;
const MIN_HEDGES = 3;

class HedgeBudget {
  /** maxPercent: hedges per 100 queries (1 to 100); now: a monotonic clock in ms, for tests. */
  constructor(maxPercent, now = () => performance.now()) {
    this.share = maxPercent / 100;
    this.now = now;
    this.queries = new Array(SLOTS).fill(0);
    this.hedges = new Array(SLOTS).fill(0);
    this.queriesInWindow = 0;
    this.hedgesInWindow = 0;
    this.slot = Math.floor(now() / SLOT_MS); // the current slot's number since the clock's origin
  }

  /** One query that may be hedged. */
  query() {
    this.advance();
    this.queries[this.slot % SLOTS]++;
    this.queriesInWindow++;
  }

  /** Whether one more hedge is within the budget; true spends it. */
  take() {
    this.advance();
    if (this.hedgesInWindow >= MIN_HEDGES && this.hedgesInWindow + 1 > this.share * this.queriesInWindow) return false;
    this.hedges[this.slot % SLOTS]++;
    this.hedgesInWindow++;
    return true;
  }

  /** Slots older than the window are emptied, at most once each. */
  advance() {
    const slot = Math.floor(this.now() / SLOT_MS);
    if (slot === this.slot) return;
    const stale = Math.min(slot - this.slot, SLOTS);
    for (let i = 1; i <= stale; i++) {
      const s = (this.slot + i) % SLOTS;
      this.queriesInWindow -= this.queries[s];
      this.hedgesInWindow -= this.hedges[s];
      this.queries[s] = 0;
      this.hedges[s] = 0;
    }
    this.slot = slot;
  }

  toJSON() {
    this.advance();
    return { windowMs: WINDOW_MS, queries: this.queriesInWindow, hedges: this.hedgesInWindow };
  }
}

module.exports = { HedgeBudget, WINDOW_MS };
