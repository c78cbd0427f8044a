'use strict';

// The circuit of one backend origin: when to stop sending it queries, and when to try again.
//
// It opens on a failure *ratio*, over a sliding window, with a minimum volume: `failureRatio` of
// at least `minimumCalls` calls that ended in the last `windowMs` (defaults 0.5, 20, 1 s). N failures
// in a row would open it on 10 ms of traffic at 500 queries/s, so one short stall became seconds of
// refused calls (docs/reliability.md, issue 24). The ratio needs the origin to fail more than it
// answers for a good part of a second: a 0.4 s stall at 500 queries/s never gets there, a dead or
// black-holed origin gets there in a fraction of a second.
//
// Open, it refuses calls at once. After `halfOpenAfterMs` (500 ms) one call goes through as a probe,
// whether or not other origins are taking the traffic (the resolver asks `isOpen`, which says no
// once a probe is due). An answer closes the circuit and resets the backoff; a failure opens it
// again for BACKOFF_FACTOR times longer, up to `maxHalfOpenAfterMs` (2 s: what refusing calls may
// cost once the backend is back; docs/configuration.md). A probe whose outcome
// says nothing about the origin (the router went away, the request never left the gateway) is
// neither: the next call probes again.
//
// Which outcomes are evidence is decided by the caller (breakers.js, `verdict`); this file is
// only the policy, on a clock it is given (tests drive it with a fake one).

const BUCKETS = 10;
/** Each failed probe waits this many times longer than the last, up to maxHalfOpenAfterMs. */
const BACKOFF_FACTOR = 1.5;

const CLOSED = 'closed';
const OPEN = 'open';
const HALF_OPEN = 'half-open';

/** What allow() hands out: a call in the closed state, a probe, or a refusal. */
const CALL = 1;
const PROBE = 2;
const REFUSED = 0;

class Circuit {
  /**
   * settings: {failureRatio, minimumCalls, windowMs, halfOpenAfterMs, maxHalfOpenAfterMs};
   * now(): milliseconds on a monotonic clock; onChange(state, from): after every change.
   */
  constructor(settings, { now, onChange = () => {} }) {
    this.failureRatio = settings.failureRatio;
    this.minimumCalls = settings.minimumCalls;
    this.bucketMs = settings.windowMs / BUCKETS;
    this.baseDelayMs = settings.halfOpenAfterMs;
    this.maxDelayMs = Math.max(settings.maxHalfOpenAfterMs, settings.halfOpenAfterMs);
    this.now = now;
    this.onChange = onChange;
    this.state = CLOSED;
    this.delayMs = this.baseDelayMs; // how long the current open spell lasts
    this.probeAt = 0; // while open: when the next probe may go
    this.probing = false; // while half-open: a probe is in flight
    // The window: BUCKETS slots of bucketMs, each {index, calls, failures}; index = floor(t / bucketMs).
    this.calls = new Float64Array(BUCKETS);
    this.failures = new Float64Array(BUCKETS);
    this.indexes = new Float64Array(BUCKETS).fill(-1);
  }

  /** True while a call now would be refused: open with no probe due yet, or a probe in flight. */
  isOpen() {
    if (this.state === CLOSED) return false;
    if (this.state === HALF_OPEN) return this.probing;
    return this.now() < this.probeAt;
  }

  /** CALL, PROBE or REFUSED; a CALL or PROBE must be followed by one record(). */
  allow() {
    if (this.state === CLOSED) return CALL;
    if (this.state === HALF_OPEN ? this.probing : this.now() < this.probeAt) return REFUSED;
    this.probing = true;
    if (this.state === OPEN) this.change(HALF_OPEN);
    return PROBE;
  }

  /**
   * The end of a call allow() let through. verdict: true (the origin failed), false (it
   * answered), or null (no evidence either way).
   */
  record(ticket, verdict) {
    if (ticket === PROBE) {
      if (this.state !== HALF_OPEN) return;
      this.probing = false; // no evidence either way: the next call probes
      if (verdict === false) {
        this.delayMs = this.baseDelayMs;
        this.clearWindow();
        this.change(CLOSED);
      } else if (verdict === true) {
        this.open(Math.min(this.maxDelayMs, this.delayMs * BACKOFF_FACTOR));
      }
      return;
    }
    if (ticket !== CALL || verdict === null || this.state !== CLOSED) return;
    const t = this.now();
    const slot = this.slot(t);
    this.calls[slot]++;
    if (verdict === true) {
      this.failures[slot]++;
      this.check(t);
    }
  }

  /** Opens when the window holds at least minimumCalls calls and failureRatio of them failed. */
  check(t) {
    const oldest = Math.floor(t / this.bucketMs) - BUCKETS + 1;
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.indexes[i] < oldest) continue;
      calls += this.calls[i];
      failures += this.failures[i];
    }
    if (calls >= this.minimumCalls && failures >= this.failureRatio * calls) this.open(this.baseDelayMs);
  }

  slot(t) {
    const index = Math.floor(t / this.bucketMs);
    const slot = index % BUCKETS;
    if (this.indexes[slot] !== index) {
      this.indexes[slot] = index;
      this.calls[slot] = 0;
      this.failures[slot] = 0;
    }
    return slot;
  }

  clearWindow() {
    this.indexes.fill(-1);
  }

  /** Refuses calls for ms, then lets one probe through. */
  open(ms) {
    this.delayMs = ms;
    this.probeAt = this.now() + ms;
    this.change(OPEN);
  }

  change(state) {
    const from = this.state;
    this.state = state;
    this.onChange(state, from);
  }
}

module.exports = { Circuit, CALL, PROBE, REFUSED };
