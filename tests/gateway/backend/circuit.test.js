'use strict';

// The circuit policy alone (gateway/backend/circuit.js), on a clock the test moves: when it opens, when it
// probes, how it backs off, and what it ignores.

const assert = require('node:assert/strict');
const {
  Circuit, CALL, PROBE, LAST, REFUSED, SLOW,
} = require('../../../gateway/backend/circuit');
const { BREAKER_DEFAULTS } = require('../../../gateway/config/availability');
const { verdict } = require('../../../gateway/backend/breakers');

function circuit(settings = {}) {
  const clock = { t: 1_000_000 };
  const changes = [];
  const c = new Circuit({ ...BREAKER_DEFAULTS, ...settings }, { now: () => clock.t, onChange: (state, from) => changes.push(`${from}->${state}`) });
  return { c, clock, changes };
}

/** n calls, each `failed` or not, spread evenly over ms. */
function calls(c, clock, n, failed, ms = 0) {
  for (let i = 0; i < n; i++) {
    const ticket = c.allow();
    if (ticket === REFUSED) return i;
    c.record(ticket, failed);
    clock.t += ms / n;
  }
  return n;
}

describe('circuit policy (fake clock)', () => {
  it('defaults: opens at 50 % of at least 20 calls within 1 s, probes after 500 ms, backs off to at most 2 s', () => {
    const {
      failureRatio, slowCallRatio, minimumCalls, windowMs, halfOpenAfterMs, maxHalfOpenAfterMs,
    } = BREAKER_DEFAULTS;
    assert.deepEqual([failureRatio, slowCallRatio, minimumCalls, windowMs, halfOpenAfterMs, maxHalfOpenAfterMs], [0.5, 1, 20, 1000, 500, 2000]);
  });

  it('needs the minimum volume: 19 failures in a row leave it closed, the 20th opens it', () => {
    const { c, clock } = circuit();
    assert.equal(calls(c, clock, 19, true, 100), 19);
    assert.equal(c.state, 'closed');
    assert.equal(calls(c, clock, 1, true), 1);
    assert.equal(c.state, 'open');
    assert.equal(c.allow(), REFUSED);
  });

  it('needs the ratio: failures under half of the window leave it closed', () => {
    const { c, clock } = circuit();
    calls(c, clock, 60, false, 500);
    calls(c, clock, 55, true, 400);
    assert.equal(c.state, 'closed', '55 of 115 failed');
    calls(c, clock, 10, true, 10);
    assert.equal(c.state, 'open', '65 of 125');
  });

  it('counts only the last windowMs: old failures age out', () => {
    const { c, clock } = circuit();
    calls(c, clock, 15, true, 100);
    clock.t += 1500;
    calls(c, clock, 10, true, 100);
    assert.equal(c.state, 'closed', 'only 10 calls in the window');
    calls(c, clock, 10, true, 100);
    assert.equal(c.state, 'open');
  });

  it('a 0.4 s stall at 500 queries/s does not open it: the answers around it outweigh it', () => {
    const { c, clock } = circuit();
    // 2 ms apart: answers for 2 s, then 200 failures (the stall's queries at their deadline)
    // interleaved with the answers of the queries sent after it, then answers.
    calls(c, clock, 1000, false, 2000);
    for (let i = 0; i < 200; i++) {
      calls(c, clock, 1, true, 1);
      calls(c, clock, 1, false, 1);
    }
    calls(c, clock, 1000, false, 2000);
    assert.equal(c.state, 'closed');
  });

  it('one probe at a time, due after halfOpenAfterMs; its answer closes and clears the window', () => {
    const { c, clock, changes } = circuit();
    calls(c, clock, 20, true);
    clock.t += 499;
    assert.equal(c.isOpen(), true);
    assert.equal(c.allow(), REFUSED);
    clock.t += 1;
    assert.equal(c.isOpen(), false, 'a probe is due: a skipped origin gets tried');
    const probe = c.allow();
    assert.equal(probe, PROBE);
    assert.equal(c.state, 'half-open');
    assert.equal(c.isOpen(), true);
    assert.equal(c.allow(), REFUSED, 'only one probe in flight');
    c.record(probe, false);
    assert.equal(c.state, 'closed');
    assert.equal(c.allow(), CALL);
    calls(c, clock, 19, true);
    assert.equal(c.state, 'closed', 'the window started afresh');
    assert.deepEqual(changes, ['closed->open', 'open->half-open', 'half-open->closed']);
  });

  it('failed probes back off by 1.5 up to maxHalfOpenAfterMs; an answer resets the backoff', () => {
    const { c, clock } = circuit({ maxHalfOpenAfterMs: 10_000 });
    calls(c, clock, 20, true);
    const waits = [];
    for (let i = 0; i < 12; i++) {
      const opened = clock.t;
      while (c.allow() === REFUSED) clock.t += 10;
      waits.push(clock.t - opened);
      c.record(PROBE, true);
    }
    assert.deepEqual(waits, [500, 750, 1130, 1690, 2540, 3800, 5700, 8550, 10_000, 10_000, 10_000, 10_000]);
    while (c.allow() === REFUSED) clock.t += 10;
    c.record(PROBE, false);
    calls(c, clock, 20, true);
    const opened = clock.t;
    while (c.allow() === REFUSED) clock.t += 10;
    assert.equal(clock.t - opened, 500, 'back to halfOpenAfterMs');
  });

  it('a probe with no evidence either way (router gone, never sent) frees the slot for the next call', () => {
    const { c, clock } = circuit();
    calls(c, clock, 20, true);
    clock.t += 500;
    c.record(c.allow(), null);
    assert.equal(c.state, 'half-open');
    assert.equal(c.isOpen(), false);
    assert.equal(c.allow(), PROBE);
  });

  it('calls with no evidence are not counted; results of calls started before it opened change nothing', () => {
    const { c, clock } = circuit();
    calls(c, clock, 100, null);
    calls(c, clock, 19, true);
    assert.equal(c.state, 'closed', 'the 100 neutral calls are not in the ratio, and 19 < 20');
    const early = c.allow();
    calls(c, clock, 1, true);
    assert.equal(c.state, 'open');
    c.record(early, false);
    assert.equal(c.state, 'open', 'an answer to a call from before the open is no probe');
  });

  it('a slow call is no failure: half the calls slow leaves it closed; every call slow (or failed) opens it, on "slow"', () => {
    const { c, clock } = circuit();
    for (let i = 0; i < 50; i++) calls(c, clock, 2, i % 2 ? SLOW : false, 20);
    assert.equal(c.state, 'closed', 'a backend that answers half its calls in time is alive');
    clock.t += 2000;
    calls(c, clock, 10, SLOW);
    calls(c, clock, 9, true);
    assert.equal(c.state, 'closed', '19 calls: under minimumCalls');
    calls(c, clock, 1, SLOW);
    assert.equal(c.state, 'open');
    assert.equal(c.openedOn, 'slow', '9 of 20 failed (under failureRatio), 20 of 20 gave no answer in time');
    const d = circuit({ slowCallRatio: 0.8 });
    calls(d.c, d.clock, 4, false);
    calls(d.c, d.clock, 16, SLOW);
    assert.equal(d.c.state, 'open', 'slowCallRatio 0.8: 16 of 20');
    assert.equal(d.c.openedOn, 'slow');
  });

  it('a call sent anyway while open (LAST): its answer closes the circuit once it was open minOpenMs, its failure changes nothing', () => {
    // The default minOpenMs (5 s) is a behaviour change: before it, a LAST answer closed the
    // circuit at once, and a backend failing every other second flapped its one-origin circuit.
    const { c, clock, changes } = circuit();
    calls(c, clock, 20, true);
    assert.equal(c.openedOn, 'failures');
    assert.equal(c.allow(), REFUSED);
    const last = c.allow(true);
    assert.equal(last, LAST);
    c.record(last, true);
    assert.equal(c.state, 'open');
    clock.t += 1000; // past halfOpenAfterMs, within minOpenMs: still LAST, no probe, and an answer does not close it
    const early = c.allow(true);
    assert.equal(early, LAST);
    c.record(early, false);
    assert.equal(c.state, 'open');
    clock.t += BREAKER_DEFAULTS.minOpenMs;
    const again = c.allow(true);
    c.record(again, false);
    assert.equal(c.state, 'closed');
    assert.equal(c.openedOn, null);
    assert.deepEqual(changes, ['closed->open', 'open->half-open', 'half-open->closed']);
    assert.equal(calls(c, clock, 19, true), 19, 'the window starts afresh');
    assert.equal(c.state, 'closed');
  });

  it('minOpenMs 0: a LAST answer closes the circuit at once', () => {
    const { c, clock, changes } = circuit({ minOpenMs: 0 });
    calls(c, clock, 20, true);
    const last = c.allow(true);
    c.record(last, false);
    assert.equal(c.state, 'closed');
    assert.deepEqual(changes, ['closed->open', 'open->closed']);
  });

  it('a single-origin circuit never flaps faster than minOpenMs: a backend failing every other 100 ms changes state at most twice per minOpenMs', () => {
    const { c, clock, changes } = circuit();
    for (let ms = 0; ms < 20_000; ms += 10) {
      clock.t += 10;
      const ticket = c.allow(true);
      c.record(ticket, Math.floor(ms / 100) % 2 === 0); // 100 ms failing, 100 ms answering
    }
    // Opened from closed, and closed, at most once per minOpenMs (a failed probe in between opens it again: no close).
    const opens = changes.filter((x) => x === 'closed->open').length;
    const closes = changes.filter((x) => x.endsWith('->closed')).length;
    assert.ok(opens >= 1 && opens <= 20_000 / BREAKER_DEFAULTS.minOpenMs, `opened ${opens} times in 20 s: ${changes.join(', ')}`);
    assert.ok(closes <= 20_000 / BREAKER_DEFAULTS.minOpenMs, `closed ${closes} times in 20 s`);
  });

  it('verdict: what counts against an origin', () => {
    assert.equal(verdict({ kind: 'ok' }), false);
    assert.equal(verdict({ kind: 'app_error' }), false, 'a 4xx is an answer');
    assert.equal(verdict({ kind: 'host_error', reason: 'http_503', blame: true }), true);
    assert.equal(verdict({ kind: 'host_error', reason: 'deadline', blame: true }), SLOW, 'on the wire until the deadline: slow, not failed');
    assert.equal(verdict({ kind: 'host_error', reason: 'timeout', blame: true }), SLOW);
    assert.equal(verdict({ kind: 'host_error', reason: 'deadline', blame: false }), null, 'waited in the gateway');
    assert.equal(verdict({ kind: 'host_error', reason: 'aborted', blame: false }), null);
  });
});
