'use strict';

// One route's canary (routes.<subtype>.canary): which queries its candidate answers, and whether it
// still may. The candidate answers the listed DN_STRINGs and `percent` of the other queries, chosen
// by a hash of RouterCallDay and RouterCallKey, so that both sides of a duplexed router, and a query
// sent again, get the same answer. Each query's failure (host errors, deadline answers) is counted
// over the last windowS for the candidate and the live route alike; once the candidate has answered
// minQueries and its share of failures exceeds the live route's by failureRate, the canary is
// rolled back: every query goes to the live route until a reload makes a new one.
//
//   armed --(candidate's failures over the live route's)--> rolled_back   (a reload: a new, armed one)

const { KIND, REASON } = require('./outcome');
const { channels } = require('./diagnostics');
const { callShare, SALT } = require('../call-share');

const STATE = Object.freeze({ ARMED: 'armed', ROLLED_BACK: 'rolled_back' });
/** The window is kept as this many buckets: it slides by a tenth of itself. */
const BUCKETS = 10;

const failed = (outcome) => outcome.kind === KIND.HOST_ERROR && outcome.reason !== REASON.ABORTED;

class CanaryWindow {
  /**
   * subtype; settings: the compiled canary (config/routes.js: candidate, dialedNumbers, percent,
   * rollback); chain: the candidate's; log: where the rollback's line goes; owner: the channels'
   * `gateway`; now: () -> ms, a clock tests can fake.
   */
  constructor(subtype, settings, chain, { log, owner, now = Date.now }) {
    this.subtype = subtype;
    this.candidate = settings.candidate;
    this.dialedNumbers = settings.dialedNumbers;
    this.percent = settings.percent;
    this.rollback = settings.rollback;
    this.chain = chain;
    this.log = log;
    this.owner = owner;
    this.now = now;
    this.state = STATE.ARMED;
    this.reason = null;
    this.rolledBackAt = null;
    this.bucketMs = (settings.rollback.windowS * 1000) / BUCKETS;
    // Per bucket: [start, candidate queries, candidate failures, live queries, live failures].
    this.buckets = Array.from({ length: BUCKETS }, () => [0, 0, 0, 0, 0]);
    this.answered = 0; // by the candidate, since it was armed
  }

  /** Whether the candidate answers q. */
  picks(q) {
    if (this.state !== STATE.ARMED) return false;
    if (q.dn !== undefined && this.dialedNumbers.has(q.dn)) return true;
    return this.percent > 0 && callShare(q.routerCallDay, q.routerCallKey, SALT.CANARY) * 100 < this.percent;
  }

  /** The bucket of now, emptied when its time came round again. */
  bucket() {
    const t = this.now();
    const start = t - (t % this.bucketMs);
    const b = this.buckets[Math.floor(t / this.bucketMs) % BUCKETS];
    if (b[0] !== start) {
      b.fill(0);
      b[0] = start;
    }
    return b;
  }

  countLive(outcome) {
    if (this.state !== STATE.ARMED) return;
    const b = this.bucket();
    b[3]++;
    if (failed(outcome)) b[4]++;
  }

  countCandidate(outcome) {
    this.answered++;
    if (this.state !== STATE.ARMED) return;
    const b = this.bucket();
    b[1]++;
    if (!failed(outcome)) return;
    b[2]++;
    this.check();
  }

  /** The sums over the window: [candidate queries, candidate failures, live queries, live failures]. */
  sums() {
    const since = this.now() - this.rollback.windowS * 1000;
    const s = [0, 0, 0, 0];
    for (const b of this.buckets) if (b[0] + this.bucketMs > since) for (let i = 0; i < 4; i++) s[i] += b[i + 1];
    return s;
  }

  check() {
    const [cq, cf, lq, lf] = this.sums();
    if (cq < this.rollback.minQueries) return;
    const candidateRate = cf / cq;
    const liveRate = lq === 0 ? 0 : lf / lq;
    if (candidateRate - liveRate <= this.rollback.failureRate) return;
    this.state = STATE.ROLLED_BACK;
    this.rolledBackAt = new Date(this.now()).toISOString();
    const pct = (r) => `${(r * 100).toFixed(1)}%`;
    this.reason = `candidate '${this.candidate}' failed ${cf} of ${cq} queries (${pct(candidateRate)}) in ${this.rollback.windowS} s, `
      + `the live route ${lf} of ${lq} (${pct(liveRate)}): over rollback.failureRate ${pct(this.rollback.failureRate)}`;
    this.log.warn(`canary of routes.${this.subtype} rolled back: ${this.reason}; every query goes to the live route until a reload`);
    if (channels.canaryRollback.hasSubscribers) {
      channels.canaryRollback.publish({
        gateway: this.owner, subtype: this.subtype, candidate: this.candidate, reason: this.reason,
      });
    }
  }

  /** For /status and the status page. */
  toJSON() {
    const [cq, cf, lq, lf] = this.sums();
    return {
      candidate: this.candidate,
      state: this.state,
      reason: this.reason,
      rolledBackAt: this.rolledBackAt,
      answered: this.answered,
      window: {
        seconds: this.rollback.windowS, candidateQueries: cq, candidateFailures: cf, liveQueries: lq, liveFailures: lf,
      },
    };
  }
}

module.exports = { CanaryWindow };
