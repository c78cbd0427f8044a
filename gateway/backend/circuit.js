'use strict';

// The circuit of one route on one backend origin: when its calls may be refused, and when to try again.
//
// It opens on a *ratio*, over a sliding window, with a minimum volume: of at least `minimumCalls`
// calls that ended in the last `windowMs` (defaults 20, 1 s), `failureRatio` failed (0.5), or
// `slowCallRatio` got no answer in time, failed or slow (1: every one). N failures in a row would
// open it on 10 ms of traffic at 500 queries/s, so one short stall became seconds of refused calls
// (docs/reliability.md). A slow call (the deadline passed while the request was on the
// wire) is not a failure: a backend that answers half its calls in time is alive, and refusing
// its calls would answer fewer of them. `openedOn` keeps which ratio opened it.
//
// Open, it says a call may be refused (allow() is REFUSED); breakers.js decides whether refusing
// helps, and may send the call anyway (allow(true): LAST). After `halfOpenAfterMs` (500 ms) one call goes through as a probe,
// whether or not other origins are taking the traffic (the resolver asks `isOpen`, which says no
// once a probe is due). An answer closes the circuit and resets the backoff; a failure opens it
// again for BACKOFF_FACTOR times longer, up to `maxHalfOpenAfterMs` (2 s: what refusing calls may
// cost once the backend is back; docs/configuration.md). A probe whose outcome
// says nothing about the origin (the router went away, the request never left the gateway) is
// neither: the next call probes again.
//
// A call sent through an open circuit (LAST: no other origin could take it) that gets an answer
// closes it, as a probe's would, once the circuit has been open `minOpenMs` (5 s); its failure
// changes nothing. Before then such calls are all LAST, no probe: a backend failing every other
// second would otherwise open and close its one-origin circuit several times a second. Which outcomes are evidence is decided by the caller
// (breakers.js, `verdict`); this file is only the policy, on a clock it is given (tests drive it
// with a fake one).

const BUCKETS = 10;
/** Each failed probe waits this many times longer than the last, up to maxHalfOpenAfterMs. */
const BACKOFF_FACTOR = 1.5;

const CLOSED = 'closed';
const OPEN = 'open';
const HALF_OPEN = 'half-open';

/** What allow() hands out: a call in the closed state, a probe, a call sent while open, or a refusal. */
const CALL = 1;
const PROBE = 2;
const LAST = 3;
const REFUSED = 0;

/** What record() is told: the origin failed, answered too late, answered, or nothing either way. */
const FAILED = true;
const SLOW = 'slow';

class Circuit {
  /**
   * settings: {failureRatio, slowCallRatio, minimumCalls, windowMs, halfOpenAfterMs, maxHalfOpenAfterMs};
   * now(): milliseconds on a monotonic clock; onChange(state, from): after every change.
   */
  constructor(settings, { now, onChange = () => {} }) {
    this.failureRatio = settings.failureRatio;
    this.slowCallRatio = settings.slowCallRatio === undefined ? 1 : settings.slowCallRatio;
    this.minimumCalls = settings.minimumCalls;
    this.bucketMs = settings.windowMs / BUCKETS;
    this.baseDelayMs = settings.halfOpenAfterMs;
    this.maxDelayMs = Math.max(settings.maxHalfOpenAfterMs, settings.halfOpenAfterMs);
    this.minOpenMs = settings.minOpenMs === undefined ? 0 : settings.minOpenMs;
    this.openedAt = 0;
    this.now = now;
    this.onChange = onChange;
    this.state = CLOSED;
    this.delayMs = this.baseDelayMs; // how long the current open spell lasts
    this.probeAt = 0; // while open: when the next probe may go
    this.probing = false; // while half-open: a probe is in flight
    this.openedOn = null; // while not closed: 'failures' or 'slow', the ratio that opened it
    // The window: BUCKETS slots of bucketMs, each {index, calls, failures, slow}; index = floor(t / bucketMs).
    this.calls = new Float64Array(BUCKETS);
    this.failures = new Float64Array(BUCKETS);
    this.slow = new Float64Array(BUCKETS);
    this.indexes = new Float64Array(BUCKETS).fill(-1);
  }

  /** True while a call now would be refused: open with no probe due yet, or a probe in flight. */
  isOpen() {
    if (this.state === CLOSED) return false;
    if (this.state === HALF_OPEN) return this.probing;
    return this.now() < this.probeAt;
  }

  /**
   * CALL, PROBE or REFUSED; anyway: LAST instead of REFUSED (the caller sends it regardless).
   * Anything but REFUSED must be followed by one record().
   */
  allow(anyway = false) {
    if (this.state === CLOSED) return CALL;
    if (anyway && this.state === OPEN && this.now() - this.openedAt < this.minOpenMs) return LAST;
    if (this.state === HALF_OPEN ? this.probing : this.now() < this.probeAt) return anyway ? LAST : REFUSED;
    this.probing = true;
    if (this.state === OPEN) this.change(HALF_OPEN);
    return PROBE;
  }

  /**
   * The end of a call allow() let through. verdict: FAILED (true: the origin failed), SLOW (no
   * answer before the deadline), false (it answered), or null (no evidence either way).
   */
  record(ticket, verdict) {
    if (ticket === LAST) {
      if (verdict === false && this.state !== CLOSED && this.now() - this.openedAt >= this.minOpenMs) this.close();
      return;
    }
    if (ticket === PROBE) {
      if (this.state !== HALF_OPEN) return;
      this.probing = false; // no evidence either way: the next call probes
      if (verdict === false) this.close();
      else if (verdict !== null) this.open(Math.min(this.maxDelayMs, this.delayMs * BACKOFF_FACTOR), this.openedOn);
      return;
    }
    if (ticket !== CALL || verdict === null || this.state !== CLOSED) return;
    const t = this.now();
    const slot = this.slot(t);
    this.calls[slot]++;
    if (verdict === false) return;
    if (verdict === SLOW) this.slow[slot]++;
    else this.failures[slot]++;
    this.check(t);
  }

  /**
   * Opens when the window holds at least minimumCalls calls, and failureRatio of them failed or
   * slowCallRatio of them failed or were slow.
   */
  check(t) {
    const oldest = Math.floor(t / this.bucketMs) - BUCKETS + 1;
    let calls = 0;
    let failures = 0;
    let slow = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.indexes[i] < oldest) continue;
      calls += this.calls[i];
      failures += this.failures[i];
      slow += this.slow[i];
    }
    if (calls < this.minimumCalls) return;
    if (failures >= this.failureRatio * calls) this.open(this.baseDelayMs, 'failures');
    else if (failures + slow >= this.slowCallRatio * calls) this.open(this.baseDelayMs, 'slow');
  }

  slot(t) {
    const index = Math.floor(t / this.bucketMs);
    const slot = index % BUCKETS;
    if (this.indexes[slot] !== index) {
      this.indexes[slot] = index;
      this.calls[slot] = 0;
      this.failures[slot] = 0;
      this.slow[slot] = 0;
    }
    return slot;
  }

  clearWindow() {
    this.indexes.fill(-1);
  }

  /** Refuses calls for ms, then lets one probe through. */
  open(ms, on) {
    if (this.state === CLOSED) this.openedAt = this.now();
    this.delayMs = ms;
    this.probeAt = this.now() + ms;
    this.openedOn = on;
    this.change(OPEN);
  }

  /** The origin answered: closed, the backoff and the window reset. */
  close() {
    this.probing = false;
    this.delayMs = this.baseDelayMs;
    this.openedOn = null;
    this.clearWindow();
    this.change(CLOSED);
  }

  change(state) {
    const from = this.state;
    this.state = state;
    this.onChange(state, from);
  }
}

module.exports = {
  Circuit, CALL, PROBE, LAST, REFUSED, FAILED, SLOW,
};
