'use strict';

// Objectives per route (config `slo`, docs/reports.md): the share of a route's queries answered
// well within a latency, over a window (99.9 % within 200 ms over 30 days, say). Per objective:
// the error budget left over the window, and the burn rates over the windows of the SRE
// workbook's multi-window, multi-burn-rate alerts (config/slo.js: for 30 days, page at 14.4x over
// 1 h and 5 min, or 6x over 6 h and 30 min; ticket at 1x over 3 days and 6 h).
//
// A query's event is good when the router got an answer it can route with (QUERY_RESP, or the
// backend's own "no", FAILURE_CONF E_AG_HOST_ERROR2: app_error) within latencyMs; bad otherwise
// (a host error, the gateway's deadline answer, a refused key, or any answer too slow). A query
// whose router went away first is no event. The same events are counted for Prometheus
// (ged145_objective_events_total{objective, result}), so that the rules `ged145 config
// prometheus-rules` prints compute the same figures over the real windows, across restarts.
//
// In the process, counts are kept per minute for 3 days and per hour for the window, in arrays
// made once: a query costs a comparison with the end of the current minute and two additions.
// Figures cover the time since the process started (`coveredS`), up to the window.

const { TallyCounter } = require('./tally');
const { ROUTER_GONE_LABELS, isFailed } = require('../backend/outcome');
const { WINDOWS, alertPolicy, objectivesOf } = require('../config/slo');

const MINUTE_MS = 60_000;
const MINUTES_KEPT = 3 * 24 * 60;
/** Outcomes of queries whose router went away first: no event. */
const NO_EVENT = new Set(ROUTER_GONE_LABELS);

/** One objective's counts: per minute (3 days) and per hour (its window), in rings. */
class Objective {
  constructor({
    name, route, objective, latencyMs, windowDays,
  }, now, tally) {
    this.name = name;
    this.route = route;
    this.objective = objective; // percent, 99.9
    this.latencyMs = latencyMs;
    this.windowDays = windowDays;
    this.goodTally = tally === null ? null : tally.tally(name, 'good');
    this.badTally = tally === null ? null : tally.tally(name, 'bad');
    this.minuteGood = new Float64Array(MINUTES_KEPT);
    this.minuteBad = new Float64Array(MINUTES_KEPT);
    this.hours = windowDays * 24;
    this.hourGood = new Float64Array(this.hours);
    this.hourBad = new Float64Array(this.hours);
    this.startedAt = now;
    this.minute = Math.floor(now / MINUTE_MS); // the current minute, its counts in good and bad
    this.minuteEnd = (this.minute + 1) * MINUTE_MS;
    this.good = 0;
    this.bad = 0;
  }

  /** Hot path: one event. */
  record(good, now) {
    if (now >= this.minuteEnd) this.roll(now);
    if (good) {
      this.good++;
      if (this.goodTally !== null) this.goodTally.n++;
    } else {
      this.bad++;
      if (this.badTally !== null) this.badTally.n++;
    }
  }

  /** The current minute is over: its counts into the rings, the minutes and hours skipped emptied. */
  roll(now) {
    const minute = Math.floor(now / MINUTE_MS);
    this.store();
    for (let m = this.minute + 1; m <= minute && m - this.minute <= MINUTES_KEPT; m++) {
      this.minuteGood[m % MINUTES_KEPT] = 0;
      this.minuteBad[m % MINUTES_KEPT] = 0;
    }
    const hour = Math.floor(this.minute / 60);
    const nextHour = Math.floor(minute / 60);
    for (let h = hour + 1; h <= nextHour && h - hour <= this.hours; h++) {
      this.hourGood[h % this.hours] = 0;
      this.hourBad[h % this.hours] = 0;
    }
    this.minute = minute;
    this.minuteEnd = (minute + 1) * MINUTE_MS;
    this.good = 0;
    this.bad = 0;
  }

  /** The current minute's counts into its slots (minute and hour), which roll() then leaves. */
  store() {
    const i = this.minute % MINUTES_KEPT;
    this.minuteGood[i] += this.good;
    this.minuteBad[i] += this.bad;
    const h = Math.floor(this.minute / 60) % this.hours;
    this.hourGood[h] += this.good;
    this.hourBad[h] += this.bad;
  }

  /**
   * Its nonzero counts by absolute minute and hour ([[minute, good, bad], ...]), the current
   * minute's included: what another process adds to its own (absorb()) when this one leaves.
   */
  export(now) {
    if (now >= this.minuteEnd) this.roll(now);
    const minutes = [];
    for (let k = 0; k < MINUTES_KEPT; k++) {
      const m = this.minute - k;
      const i = ((m % MINUTES_KEPT) + MINUTES_KEPT) % MINUTES_KEPT;
      const good = this.minuteGood[i] + (k === 0 ? this.good : 0);
      const bad = this.minuteBad[i] + (k === 0 ? this.bad : 0);
      if (good + bad > 0) minutes.push([m, good, bad]);
    }
    const hours = [];
    const hour = Math.floor(this.minute / 60);
    for (let k = 0; k < this.hours; k++) {
      const h = hour - k;
      const i = ((h % this.hours) + this.hours) % this.hours;
      const good = this.hourGood[i] + (k === 0 ? this.good : 0);
      const bad = this.hourBad[i] + (k === 0 ? this.bad : 0);
      if (good + bad > 0) hours.push([h, good, bad]);
    }
    return { minutes, hours };
  }

  /** Adds another process's export(): what is older than this objective's rings keep is left out, what is newer counts as now. */
  absorb({ minutes, hours }, now) {
    if (now >= this.minuteEnd) this.roll(now);
    for (const [m, good, bad] of minutes) {
      if (this.minute - m >= MINUTES_KEPT) continue;
      const i = Math.min(m, this.minute) % MINUTES_KEPT;
      this.minuteGood[i] += good;
      this.minuteBad[i] += bad;
    }
    const hour = Math.floor(this.minute / 60);
    for (const [h, good, bad] of hours) {
      if (hour - h >= this.hours) continue;
      const i = Math.min(h, hour) % this.hours;
      this.hourGood[i] += good;
      this.hourBad[i] += bad;
    }
  }

  /** Raw counts over each window and over the objective's window, to be added across processes before dividing. */
  counts(now) {
    if (now >= this.minuteEnd) this.roll(now);
    // The current minute's counts are in good/bad, not yet in the rings: read them in as if stored.
    // Its slot is empty unless counts of another process were absorbed into it.
    const current = this.minute % MINUTES_KEPT;
    const windows = {};
    for (const [w, minutes] of Object.entries(WINDOWS)) {
      let good = this.good + this.minuteGood[current];
      let bad = this.bad + this.minuteBad[current];
      for (let k = 0; k < minutes - 1 && k < MINUTES_KEPT - 1; k++) {
        const i = (((this.minute - 1 - k) % MINUTES_KEPT) + MINUTES_KEPT) % MINUTES_KEPT;
        good += this.minuteGood[i];
        bad += this.minuteBad[i];
      }
      windows[w] = { good, bad };
    }
    let good = this.good;
    let bad = this.bad;
    for (let k = 0; k < this.hours; k++) {
      good += this.hourGood[k];
      bad += this.hourBad[k];
    }
    return {
      windows, good, bad, coveredS: Math.min(this.windowDays * 86_400, Math.floor((now - this.startedAt) / 1000)),
    };
  }
}

class Objectives {
  /**
   * specs: [{name, route, objective (percent), latencyMs, windowDays}] (objectivesOf(config));
   * registry: a prom-client registry for ged145_objective_events_total (or null); now: the clock.
   */
  constructor(specs = [], { registry = null, prefix = 'ged145_', now = Date.now } = {}) {
    this.now = now;
    this.tally = registry === null ? null : new TallyCounter({
      name: `${prefix}objective_events_total`,
      help: 'Queries of routes with an objective (slo), by objective and result: good (answered within its latencyMs), bad',
      labelNames: ['objective', 'result'],
      registers: [registry],
    });
    this.list = [];
    this.byRoute = new Map(); // subtype -> its objective
    this.configure(specs);
  }

  /**
   * The objectives of a (re)loaded configuration: one whose settings did not change keeps its
   * counts; a new one starts empty; one no longer configured is dropped (its Prometheus counter
   * stays, as counters do).
   */
  configure(specs) {
    const old = new Map(this.list.map((o) => [o.name, o]));
    const now = this.now();
    this.list = specs.map((s) => {
      const o = old.get(s.name);
      if (o !== undefined && o.route === s.route && o.windowDays === s.windowDays) {
        o.objective = s.objective; // the same events: a new target reads them afresh
        if (o.latencyMs === s.latencyMs) return o;
      }
      return new Objective(s, now, this.tally);
    });
    this.byRoute = new Map(this.list.map((o) => [o.route, o]));
  }

  /** Hot path: a query settled. outcome: its label; ms: read to written; t: now, when the caller has read the clock already. */
  query(subtype, outcome, ms, t) {
    const o = this.byRoute.get(subtype);
    if (o === undefined || NO_EVENT.has(outcome)) return;
    o.record(!isFailed(outcome) && ms <= o.latencyMs, t === undefined ? this.now() : t);
  }

  /** Each objective's counts as export() gives them, with what names it: what a leaving worker hands over. */
  export() {
    const now = this.now();
    return this.list.map((o) => ({
      name: o.name, route: o.route, latencyMs: o.latencyMs, windowDays: o.windowDays, ...o.export(now),
    }));
  }

  /** Adds another process's export(): counts of an objective configured here with the same route, latency and window. */
  absorb(exported) {
    const now = this.now();
    for (const e of exported) {
      const o = this.list.find((x) => x.name === e.name);
      if (o !== undefined && o.route === e.route && o.latencyMs === e.latencyMs && o.windowDays === e.windowDays) o.absorb(e, now);
    }
  }

  /** What /status shows: per objective its settings, raw counts and the figures read from them. */
  toJSON() {
    const now = this.now();
    return this.list.map((o) => view({
      name: o.name, route: o.route, objective: o.objective, latencyMs: o.latencyMs, windowDays: o.windowDays,
    }, o.counts(now)));
  }
}

/**
 * An objective's figures from its counts: budget left, burn rate per window, which alerts would
 * fire. Nothing is judged from less time than its short window holds: a few seconds of traffic
 * with one slow answer would read as a budget spent forty times over and a page. Until then the
 * budget and the alert are null, and `judgedInS` says how long until the first judgement.
 */
function view(spec, counts) {
  const allowed = 1 - spec.objective / 100; // the error budget, as a share of events
  const burn = {};
  for (const [w, c] of Object.entries(counts.windows)) {
    const total = c.good + c.bad;
    burn[w] = total === 0 ? null : round((c.bad / total) / allowed);
  }
  const total = counts.good + counts.bad;
  const covered = (w) => counts.coveredS >= WINDOWS[w] * 60;
  const policy = alertPolicy(spec.windowDays);
  const alerts = {};
  for (const a of policy) {
    if (!covered(a.short)) {
      if (!(a.severity in alerts)) alerts[a.severity] = null;
      continue;
    }
    const fires = burn[a.long] !== null && burn[a.short] !== null && burn[a.long] > a.factor && burn[a.short] > a.factor;
    alerts[a.severity] = alerts[a.severity] === true || fires;
  }
  const firstShort = Math.min(...policy.map((a) => WINDOWS[a.short])) * 60;
  const judged = counts.coveredS >= firstShort;
  return {
    ...spec,
    ...counts,
    events: total,
    goodPercent: total === 0 ? null : round((100 * counts.good) / total),
    budgetLeftPercent: !judged ? null : total === 0 ? 100 : round(100 * (1 - (counts.bad / total) / allowed)),
    judgedInS: judged ? 0 : firstShort - counts.coveredS,
    burnRates: burn,
    alerts,
  };
}
const round = (n) => Math.round(n * 1000) / 1000;

/** One list from several processes' (a cluster's workers'): counts added per objective, then read again. */
function mergeObjectives(lists) {
  const byName = new Map();
  for (const list of lists) {
    for (const o of list) {
      const m = byName.get(o.name);
      if (m === undefined) {
        byName.set(o.name, {
          spec: {
            name: o.name, route: o.route, objective: o.objective, latencyMs: o.latencyMs, windowDays: o.windowDays,
          },
          counts: {
            windows: Object.fromEntries(Object.entries(o.windows).map(([w, c]) => [w, { ...c }])), good: o.good, bad: o.bad, coveredS: o.coveredS,
          },
        });
        continue;
      }
      for (const [w, c] of Object.entries(o.windows)) {
        m.counts.windows[w].good += c.good;
        m.counts.windows[w].bad += c.bad;
      }
      m.counts.good += o.good;
      m.counts.bad += o.bad;
      m.counts.coveredS = Math.max(m.counts.coveredS, o.coveredS);
    }
  }
  return [...byName.values()].map((m) => view(m.spec, m.counts));
}

module.exports = {
  Objectives, mergeObjectives, objectivesOf, WINDOWS,
};
