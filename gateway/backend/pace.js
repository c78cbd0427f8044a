'use strict';

// How fast one route may call one backend origin, as the origin itself asks (breakers.js keeps one
// per route per origin, beside its circuit; docs/reliability.md has the why and the comparison
// with Envoy and Kong):
//
// - A 429 or 503 with Retry-After pauses the calls for that long (capped at retryAfter.maxMs):
//   each query gets its substitute at once (stale, fallback, E_AG_HOST_ERROR1), as an open
//   circuit's refusal does. When the pause ends, exactly one call goes as a probe; the others are
//   refused until its answer: a new Retry-After pauses again, anything else ends the pause.
// - A 429 (with or without Retry-After) says the route sends faster than the origin takes: the
//   route gets a rate limit, a token bucket whose rate is learnt AIMD-fashion. The first 429 sets
//   it to half the rate the route was sending at; each further 429 (at most one per second, as
//   TCP cuts once per round trip) to DECREASE of it; every second without a 429 adds INCREASE of
//   the rate set at the last cut, and a route that met no 429 for adaptiveRate.releaseAfterMs
//   sends unlimited again. A call over the rate is refused at once, never queued: the router's
//   deadline is shorter than any wait worth having.
//
// Everything is O(1) per call with no allocation: a few numbers and a clock (tests give a fake one).

/** allow()'s answers: a call, the probe that ends a pause, or a refusal (paused, over the learnt rate). */
const CALL = 1;
const PROBE = 2;
const PAUSED = -1;
const OVER_RATE = -2;

const DECREASE = 0.7;
const FIRST_DECREASE = 0.5;
const INCREASE = 0.05; // of the rate set at the last cut, per second without a 429
const CUT_EVERY_MS = 1000;
const BURST_S = 0.1; // the bucket holds this many seconds of the rate (at least MIN_BURST calls)
const MIN_BURST = 2;

class Pace {
  /**
   * settings: {retryAfter: {enabled, maxMs}, adaptiveRate: {enabled, minPerSecond, releaseAfterMs}};
   * now(): milliseconds on a monotonic clock.
   */
  constructor(settings, now) {
    this.pauseOn = settings.retryAfter.enabled;
    this.maxPauseMs = settings.retryAfter.maxMs;
    this.adaptive = settings.adaptiveRate.enabled;
    this.minRate = settings.adaptiveRate.minPerSecond;
    this.releaseAfterMs = settings.adaptiveRate.releaseAfterMs;
    this.now = now;
    this.pausedUntil = 0; // 0: not paused; else until when (a probe goes once it is past)
    this.probing = false;
    this.pauses = 0;
    this.cuts = 0;
    this.refused = 0;
    // The learnt rate: Infinity (none), or cutRate growing by INCREASE per second since cutAt.
    this.rate = Infinity;
    this.cutRate = Infinity;
    this.cutAt = 0;
    this.tokens = 0;
    this.filledAt = 0;
    // Calls sent in this second and the last (the rate the first 429 is measured against), and
    // since when it has been counting (a 429 in the first second of traffic is measured over that).
    this.second = -1;
    this.thisSecond = 0;
    this.lastSecond = 0;
    this.countingSince = -1;
  }

  /** CALL or PROBE (to be followed by one record()), or PAUSED / OVER_RATE (refused: no record). */
  allow() {
    if (this.pausedUntil !== 0) {
      if (this.probing || this.now() < this.pausedUntil) return this.refuse(PAUSED);
      this.probing = true;
      return PROBE;
    }
    if (this.rate !== Infinity && !this.take()) return this.refuse(OVER_RATE);
    if (this.adaptive) this.count();
    return CALL;
  }

  refuse(why) {
    this.refused++;
    return why;
  }

  /**
   * The end of a call allow() let through. limited: the origin answered 429; retryAfterMs: its
   * Retry-After (429 or 503), undefined without one; evidence: whether the call said anything
   * about the origin (false: the router went away, or the request never left).
   */
  record(pass, limited, retryAfterMs, evidence) {
    if (pass === PROBE) {
      this.probing = false;
      if (evidence && retryAfterMs === undefined) this.pausedUntil = 0;
    }
    if (retryAfterMs !== undefined && this.pauseOn) this.pause(retryAfterMs);
    if (limited && this.adaptive) this.cut();
  }

  /** A call let through that was not sent after all (its circuit refused it). */
  cancel(pass) {
    if (pass === PROBE) this.probing = false;
  }

  pause(ms) {
    const until = this.now() + Math.min(Math.max(ms, 0), this.maxPauseMs);
    if (until > this.pausedUntil) {
      if (this.pausedUntil === 0) this.pauses++;
      this.pausedUntil = until;
    }
  }

  /** A 429: the rate down (the first from what the route was sending). */
  cut() {
    const t = this.now();
    const rate = this.rate === Infinity ? Infinity : this.currentRate(t);
    if (rate !== Infinity && t - this.cutAt < CUT_EVERY_MS) return;
    this.cutRate = Math.max(this.minRate, rate === Infinity ? this.sentPerSecond(t) * FIRST_DECREASE : rate * DECREASE);
    this.cuts++;
    this.rate = this.cutRate;
    this.cutAt = t;
    this.tokens = 0;
    this.filledAt = t;
  }

  /** The learnt rate at t: the cut's, plus INCREASE of it per second since (Infinity once released). */
  currentRate(t) {
    const since = t - this.cutAt;
    if (since >= this.releaseAfterMs) return Infinity;
    return this.cutRate * (1 + (INCREASE * Math.max(0, since - CUT_EVERY_MS)) / 1000);
  }

  /** One token from the bucket, refilled at the current rate; false when empty. */
  take() {
    const t = this.now();
    const rate = this.currentRate(t);
    if (rate === Infinity) {
      this.rate = Infinity;
      return true;
    }
    this.rate = rate;
    const burst = Math.max(MIN_BURST, rate * BURST_S);
    this.tokens = Math.min(burst, this.tokens + ((t - this.filledAt) * rate) / 1000);
    this.filledAt = t;
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }

  count() {
    const t = this.now();
    const s = Math.floor(t / 1000);
    if (s !== this.second) {
      if (s !== this.second + 1) this.countingSince = t; // a second or more without a call: start afresh
      this.lastSecond = s === this.second + 1 ? this.thisSecond : 0;
      this.thisSecond = 0;
      this.second = s;
    }
    this.thisSecond++;
  }

  /** Calls a second over the last second (or over the time it has been counting, when shorter). */
  sentPerSecond(t) {
    const s = Math.floor(t / 1000);
    let calls;
    if (s === this.second) calls = this.thisSecond + this.lastSecond * (1 - (t - s * 1000) / 1000);
    else calls = s === this.second + 1 ? this.thisSecond * (1 - (t - s * 1000) / 1000) : 0;
    const span = Math.min(1000, Math.max(t - this.countingSince, 10));
    return (calls * 1000) / span;
  }

  /** For /status: whether it is paused and until when (ms from now), the learnt rate, what it refused. */
  toJSON() {
    const t = this.now();
    const rate = this.rate === Infinity ? null : this.currentRate(t);
    return {
      pausedForMs: this.pausedUntil === 0 ? null : Math.max(0, Math.round(this.pausedUntil - t)),
      ratePerSecond: rate === null || rate === Infinity ? null : Math.round(rate * 10) / 10,
      pauses: this.pauses,
      refused: this.refused,
    };
  }

  /** Whether it says anything worth showing (/status lists only those). */
  active() {
    return this.pausedUntil !== 0 || this.rate !== Infinity || this.refused > 0;
  }
}

/**
 * Retry-After (RFC 9110 10.2.3): delta-seconds, or an HTTP-date; the milliseconds to wait, or
 * undefined when absent or unreadable. now: Date.now() for a date.
 */
function parseRetryAfter(value, now = Date.now()) {
  if (value === undefined || value === null) return undefined;
  const text = String(Array.isArray(value) ? value[0] : value).trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/^[A-Za-z]{3}/.test(text)) return undefined; // an HTTP-date starts with the day's name; Date.parse would take "-1"
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

module.exports = {
  Pace, parseRetryAfter, CALL, PROBE, PAUSED, OVER_RATE,
};
