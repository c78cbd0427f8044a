'use strict';

// Objectives per route alone (gateway/ops/objectives.js), on a clock the test moves: which queries
// are good events, the burn rate over each window, the budget left over the objective's window,
// the multi-window alerts, a reload, a cluster's sum, and the Prometheus counter.

const assert = require('node:assert/strict');
const client = require('prom-client');
const { Objectives, mergeObjectives } = require('../../../gateway/ops/objectives');
const { objectivesOf } = require('../../../gateway/config/slo');

const MIN = 60_000;
const cust = {
  name: 'cust', route: 'cust', objective: 99.9, latencyMs: 200, windowDays: 30,
};

/** n queries of subtype: `bad` of them host errors, the rest ok in 20 ms. */
function traffic(o, n, bad, subtype = 'cust') {
  for (let i = 0; i < n; i++) o.query(subtype, i < bad ? 'host_error' : 'ok', 20);
}

describe('objectives (unit)', () => {
  it('good: answered (app_error included) within latencyMs; bad: failed or slower; a router gone first: no event', () => {
    let now = 10 * 86_400_000;
    const o = new Objectives([cust], { now: () => now });
    o.query('cust', 'ok', 200); // exactly the latency: good
    o.query('cust', 'stale', 5);
    o.query('cust', 'app_error', 30); // the backend's own "no": an answer
    o.query('cust', 'ok', 200.5); // too slow
    o.query('cust', 'deadline', 250);
    o.query('cust', 'invalid_key', 0);
    o.query('cust', 'lost_router_gone', 900);
    o.query('other', 'host_error', 1); // no objective
    now += 1000;
    const [v] = o.toJSON();
    assert.deepEqual([v.good, v.bad, v.events], [3, 3, 6]);
    assert.equal(v.goodPercent, 50);
  });

  it('burn rate per window: the share of bad events over the budget; events age out of the short windows', () => {
    let now = 100 * 86_400_000;
    const o = new Objectives([cust], { now: () => now });
    now += 10 * MIN;
    traffic(o, 1000, 10); // 1 % bad: 10x a 0.1 % budget
    now += 2 * 60 * MIN; // two hours later: only in the windows of 6 h and more
    traffic(o, 1000, 0);
    const [v] = o.toJSON();
    assert.equal(v.burnRates['5m'], 0);
    assert.equal(v.burnRates['1h'], 0);
    assert.equal(v.burnRates['6h'], 5, '10 bad of 2000');
    assert.equal(v.burnRates['3d'], 5);
    assert.equal(v.budgetLeftPercent, -400, '10 bad where 2 were allowed: 5 budgets spent');
    assert.deepEqual(v.alerts, { page: false, ticket: null }, 'the ticket reads 6 hours, and 2 h 10 min were seen: not judged yet');
    now += 3 * 60 * MIN + 55 * MIN; // 6 h 5 min seen, the bad events 5 h 55 min ago
    assert.deepEqual(o.toJSON()[0].alerts, { page: false, ticket: true }, '5x over 3 days and 6 hours: over 1x, a ticket');
    now += 3 * 86_400_000;
    const [later] = o.toJSON();
    assert.equal(later.burnRates['3d'], null, 'three days on: no event in any burn-rate window');
    assert.equal(later.events, 2000, 'still within the 30-day window');
    assert.equal(later.coveredS, 3 * 86_400 + 6 * 3600 + 5 * 60);
  });

  it('the page alert: over 14.4x both over 1 h and over 5 min; a burst that is over stops it', () => {
    let now = 50 * 86_400_000;
    const o = new Objectives([cust], { now: () => now });
    for (let m = 0; m < 60; m++) {
      traffic(o, 100, 2); // 2 % bad: 20x
      now += MIN;
    }
    assert.deepEqual(o.toJSON()[0].alerts, { page: true, ticket: null }, 'an hour seen: the page judged, the ticket (6 h) not yet');
    for (let m = 0; m < 5; m++) {
      traffic(o, 100, 0);
      now += MIN;
    }
    const [v] = o.toJSON();
    assert.equal(v.burnRates['5m'], 0);
    assert.ok(v.burnRates['1h'] > 14.4, 'the long window still remembers it');
    assert.ok(v.burnRates['30m'] > 6 && v.burnRates['6h'] > 6);
    assert.equal(v.alerts.page, true, 'the first pair is quiet (its 5 minutes say it is over), the second (6 h and 30 min) still pages');
    for (let m = 0; m < 30; m++) {
      traffic(o, 100, 0);
      now += MIN;
    }
    assert.equal(o.toJSON()[0].alerts.page, false, 'thirty minutes of good answers: both short windows are quiet');
  });

  it('nothing is judged from less time than its short window: a few seconds of failures are no budget spent and no page', () => {
    let now = 60 * 86_400_000;
    const o = new Objectives([cust], { now: () => now });
    now += 14_000;
    traffic(o, 50, 2); // 4 % bad over 14 s
    let [v] = o.toJSON();
    assert.deepEqual([v.bad, v.burnRates['5m'], v.budgetLeftPercent, v.judgedInS], [2, 40, null, 286]);
    assert.deepEqual(v.alerts, { page: null, ticket: null });
    now += 5 * MIN - 14_000;
    traffic(o, 50, 2); // the same 4 % on
    [v] = o.toJSON();
    assert.deepEqual([v.budgetLeftPercent, v.judgedInS], [-3900, 0], 'five minutes seen: the budget is judged');
    assert.deepEqual(v.alerts, { page: true, ticket: null }, '40x over 1 h and 5 min: a page; the ticket waits for its 6 h');
  });

  it('the burn rates are the window\'s: 5x pages a 7-day objective (over 3.36x), not a 30-day one (under 14.4x and 6x)', () => {
    let now = 70 * 86_400_000;
    const week = { ...cust, name: 'week', route: 'week', windowDays: 7 };
    const o = new Objectives([cust, week], { now: () => now });
    for (let m = 0; m < 60; m++) {
      traffic(o, 1000, 5); // 0.5 % bad: 5x a 0.1 % budget
      traffic(o, 1000, 5, 'week');
      now += MIN;
    }
    const [month, seven] = o.toJSON();
    assert.deepEqual([month.name, month.burnRates['1h'], month.alerts.page], ['cust', 5, false]);
    assert.deepEqual([seven.name, seven.burnRates['1h'], seven.alerts.page], ['week', 5, true]);
    const day = new Objectives([{ ...cust, windowDays: 1 }], { now: () => now });
    assert.deepEqual(Object.keys(day.toJSON()[0].alerts), ['page'], 'a 3-day ticket cannot judge a 1-day budget: a 1-day objective has none');
  });

  it('the objective window: events older than windowDays leave the budget', () => {
    let now = 20 * 86_400_000;
    const o = new Objectives([{ ...cust, windowDays: 1 }], { now: () => now });
    traffic(o, 100, 100);
    now += 25 * 60 * MIN;
    traffic(o, 10, 0);
    const [v] = o.toJSON();
    assert.deepEqual([v.good, v.bad, v.budgetLeftPercent], [10, 0, 100]);
  });

  it('a reload keeps the counts of an unchanged objective, starts a changed one afresh, drops a removed one', () => {
    let now = 30 * 86_400_000;
    const o = new Objectives([cust, { ...cust, name: 'bal', route: 'bal' }], { now: () => now });
    traffic(o, 10, 1);
    traffic(o, 10, 1, 'bal');
    now += 5 * MIN;
    o.configure([{ ...cust, objective: 99 }, { ...cust, name: 'new', route: 'new' }]);
    const [a, b] = o.toJSON();
    assert.deepEqual([a.name, a.events, a.objective, a.budgetLeftPercent], ['cust', 10, 99, -900]);
    assert.deepEqual([b.name, b.events], ['new', 0]);
    o.configure([{ ...cust, latencyMs: 100 }]);
    assert.equal(o.toJSON()[0].events, 0, 'another latency: other events');
  });

  it("a cluster's workers: counts added before the rates are read", () => {
    const now = 40 * 86_400_000;
    const w1 = new Objectives([cust], { now: () => now });
    const w2 = new Objectives([cust], { now: () => now });
    traffic(w1, 100, 0);
    traffic(w2, 900, 9);
    const [v] = mergeObjectives([w1.toJSON(), JSON.parse(JSON.stringify(w2.toJSON()))]);
    assert.deepEqual([v.events, v.bad, v.burnRates['5m']], [1000, 9, 9], '9 of 1000, not the mean of 0x and 10x');
  });

  it("a worker that leaves: its counts, exported by minute and hour, are absorbed and age there as in the worker", () => {
    let now = 50 * 86_400_000;
    const worker = new Objectives([cust], { now: () => now });
    const primary = new Objectives([cust], { now: () => now });
    traffic(worker, 1000, 10);
    now += 10 * MIN;
    traffic(worker, 1000, 0); // the current minute's counts: not yet in the rings
    primary.absorb(JSON.parse(JSON.stringify(worker.export())));
    traffic(primary, 1000, 0);
    const [v] = primary.toJSON();
    assert.deepEqual([v.events, v.bad, v.burnRates['5m'], v.burnRates['1h']], [3000, 10, 0, 3.333]);
    now += 2 * 60 * MIN;
    const [later] = primary.toJSON();
    assert.deepEqual([later.events, later.burnRates['1h'], later.burnRates['6h']], [3000, null, 3.333], 'out of the hour, still in 6 h');
    primary.absorb([{ ...worker.export()[0], latencyMs: 100 }]);
    assert.equal(primary.toJSON()[0].events, 3000, 'another latency: other events, not added');
  });

  it('counts good and bad events in ged145_objective_events_total', async () => {
    const registry = new client.Registry();
    const o = new Objectives([cust], { registry, now: () => 0 });
    traffic(o, 5, 2);
    const text = await registry.metrics();
    assert.match(text, /^ged145_objective_events_total\{objective="cust",result="good"\} 3$/m);
    assert.match(text, /^ged145_objective_events_total\{objective="cust",result="bad"\} 2$/m);
  });

  it('objectivesOf: one objective per configured route, named after it', () => {
    assert.deepEqual(objectivesOf({ slo: { z: { objective: 99, latencyMs: 100, windowDays: 7 }, a: {} } }), [
      { name: 'a', route: 'a', objective: 99.9, latencyMs: 200, windowDays: 30 }, // the schema's defaults
      { name: 'z', route: 'z', objective: 99, latencyMs: 100, windowDays: 7 },
    ]);
    assert.deepEqual(objectivesOf({}), []);
  });
});
