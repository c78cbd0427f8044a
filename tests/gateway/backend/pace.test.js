'use strict';

// pace.js on a fake clock: a Retry-After pause with exactly one probe at its end, and the rate
// learnt from 429s (AIMD) that refuses what goes over it at once.

const assert = require('node:assert/strict');
const {
  Pace, parseRetryAfter, CALL, PROBE, PAUSED, OVER_RATE,
} = require('../../../gateway/backend/pace');

const SETTINGS = {
  retryAfter: { enabled: true, maxMs: 30_000 },
  adaptiveRate: { enabled: true, minPerSecond: 1, releaseAfterMs: 60_000 },
};

function pace(settings = SETTINGS) {
  const clock = { t: 1_000_000 };
  return { p: new Pace(settings, () => clock.t), clock };
}

/** Offers `rate` calls a second for ms: how many were let through (each answered as `answer` says). */
function offer(p, clock, { rate, ms, answer = () => ({ limited: false }) }) {
  let sent = 0;
  const step = 1000 / rate;
  for (let t = 0; t < ms; t += step) {
    clock.t += step;
    const pass = p.allow();
    if (pass < 0) continue;
    sent++;
    const a = answer(sent);
    p.record(pass, a.limited, a.retryAfterMs, true);
  }
  return sent;
}

describe('pace (unit, fake clock)', () => {
  it('Retry-After pauses every call, then exactly one probe; its answer ends the pause', () => {
    const { p, clock } = pace();
    assert.equal(p.allow(), CALL);
    p.record(CALL, false, 5000, true); // a 503 Retry-After: 5
    for (let i = 0; i < 100; i++) {
      clock.t += 49;
      assert.equal(p.allow(), PAUSED);
    }
    clock.t += 200; // 5.1 s later
    assert.equal(p.allow(), PROBE);
    assert.equal(p.allow(), PAUSED, 'one probe at a time');
    p.record(PROBE, false, undefined, true);
    assert.equal(p.allow(), CALL);
    assert.equal(p.toJSON().pauses, 1);
    assert.equal(p.toJSON().refused, 101);
  });

  it('a probe answered with Retry-After again pauses again; a probe that says nothing lets the next call probe', () => {
    const { p, clock } = pace();
    p.record(p.allow(), false, 1000, true);
    clock.t += 1001;
    const probe = p.allow();
    assert.equal(probe, PROBE);
    p.record(probe, false, 2000, true);
    clock.t += 1500;
    assert.equal(p.allow(), PAUSED);
    clock.t += 600;
    const second = p.allow();
    assert.equal(second, PROBE);
    p.record(second, false, undefined, false); // the router went away: no evidence
    assert.equal(p.allow(), PROBE);
  });

  it('a Retry-After is capped at retryAfter.maxMs, and ignored when retryAfter is off', () => {
    const { p, clock } = pace();
    p.record(p.allow(), false, 3_600_000, true);
    clock.t += 30_001;
    assert.equal(p.allow(), PROBE);
    const off = pace({ ...SETTINGS, retryAfter: { enabled: false, maxMs: 30_000 } });
    off.p.record(off.p.allow(), false, 5000, true);
    assert.equal(off.p.allow(), CALL);
  });

  it('429s without Retry-After: the rate is learnt (half of what was sent), calls over it refused at once, then it grows back', () => {
    const { p, clock } = pace();
    // An API that takes 100 a second, offered 200: every call over 100 in a second is a 429.
    let second = -1;
    let inSecond = 0;
    const api = () => {
      const s = Math.floor(clock.t / 1000);
      if (s !== second) { second = s; inSecond = 0; }
      inSecond++;
      return { limited: inSecond > 100 };
    };
    let limited = 0;
    const counting = () => { const a = api(); if (a.limited) limited++; return a; };
    const sent = offer(p, clock, { rate: 200, ms: 10_000, answer: counting });
    assert.ok(sent >= 600 && sent <= 1100, `sent ${sent} in 10 s (the API takes 1000), ${limited} met a 429`);
    assert.ok(limited <= 100, `${limited} of 2000 offered met a 429`);
    const { ratePerSecond } = p.toJSON();
    assert.ok(ratePerSecond > 30 && ratePerSecond < 140, `learnt ${ratePerSecond}/s`);
    // No 429 for releaseAfterMs: unlimited again.
    clock.t += 61_000;
    assert.equal(offer(p, clock, { rate: 200, ms: 1000 }), 200);
    assert.equal(p.toJSON().ratePerSecond, null);
  });

  it('OVER_RATE never waits: a call over the rate is refused in the same turn', () => {
    const { p, clock } = pace();
    offer(p, clock, { rate: 100, ms: 1000 });
    p.record(p.allow(), true, undefined, true); // a 429: about 50/s from now
    let refused = 0;
    for (let i = 0; i < 100; i++) if (p.allow() === OVER_RATE) refused++;
    assert.ok(refused >= 97, `${refused} of 100 at once refused`);
  });

  it('Retry-After: delta-seconds and HTTP-date', () => {
    const now = Date.parse('2026-11-25T10:00:00Z');
    assert.equal(parseRetryAfter('5', now), 5000);
    assert.equal(parseRetryAfter(' 120 ', now), 120_000);
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 10:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 09:00:00 GMT', now), 0, 'a date in the past: no wait');
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
    assert.equal(parseRetryAfter('-1', now), undefined);
  });
});
