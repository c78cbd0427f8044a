'use strict';

// The router's half-hour view and the objectives of one gateway (docs/reports.md), fed by the
// channels its core publishes (docs/diagnostics.md): ged145:query:settle for every query, and
// ged145:connection:refused for a connection or session refused; a query a canary's candidate
// answered is known from the backend's ged145:canary:answer (the shadow report's, published before
// the query settles). One process may hold several gateways (the warm-up's private one, tests):
// only the messages of the attached one count.
//
// The object belongs to whoever runs the gateway (gateway/index.js, a cluster worker), not to what
// a reload replaces: a reload changes its settings (read from the gateway's config when it
// changes) and keeps its figures.

const { performance } = require('node:perf_hooks');
const { channels } = require('../session/diagnostics');
const { HalfHours, mergeHalfHours } = require('./half-hour');
const { Objectives, mergeObjectives } = require('./objectives');
const { objectivesOf } = require('../config/slo');
const { ShadowReport, mergeShadow } = require('./shadow-report');

/** How often the wall clock's distance from performance.now() is read again (an NTP step moves it). */
const CLOCK_CHECK_MS = 10_000;

class Reports {
  /** registry: where ged145_objective_events_total is registered (the gateway's metrics), or null; now: the wall clock. */
  constructor({ registry = null, now = Date.now } = {}) {
    this.now = now;
    this.halfHours = new HalfHours({ now });
    this.objectives = new Objectives([], { registry, now });
    this.shadow = new ShadowReport({ now }); // shadow traffic and canaries (docs/safe-change.md)
    this.gateway = null;
    this.config = null; // the configuration the settings were last read from
    this.wallOffset = now() - performance.now(); // wall clock = performance.now() + this
    this.clockTimer = null;
    this.onSettle = (msg) => {
      if (msg.gateway !== this.gateway) return;
      if (msg.gateway.config !== this.config) this.follow(msg.gateway.config);
      const { query } = msg;
      // When it settled, by additions: the message has when the query arrived and how long it took.
      const t = this.wallOffset + query.receivedAt + msg.ms;
      this.halfHours.query(query.side, query.subtype, msg.outcome, msg.status !== null, msg.ms, t, this.shadow.isCanary(query.fields));
      this.objectives.query(query.subtype, msg.outcome, msg.ms, t);
    };
    this.onRefused = (msg) => {
      if (msg.gateway === this.gateway) this.halfHours.refused(null);
    };
  }

  /** Counts gateway's queries and refusals from now on. */
  attach(gateway) {
    this.gateway = gateway;
    this.shadow.attach(gateway);
    this.follow(gateway.config);
    channels.querySettle.subscribe(this.onSettle);
    channels.connectionRefused.subscribe(this.onRefused);
    this.clockTimer = setInterval(() => { this.wallOffset = this.now() - performance.now(); }, CLOCK_CHECK_MS).unref();
    return this;
  }

  /** The settings of a (re)loaded configuration: the figures stay. */
  follow(config) {
    this.config = config;
    this.halfHours.configure({ lateTimeoutMs: config.routerLateTimeoutMs });
    this.objectives.configure(objectivesOf(config));
  }

  detach() {
    channels.querySettle.unsubscribe(this.onSettle);
    channels.connectionRefused.unsubscribe(this.onRefused);
    clearInterval(this.clockTimer);
    this.shadow.detach();
    this.gateway = null;
  }

  /** What /status adds: {halfHours, objectives, shadow}. */
  toJSON() {
    return { halfHours: this.halfHours.toJSON(), objectives: this.objectives.toJSON(), shadow: this.shadow.toJSON() };
  }

  /** What a cluster worker gives its primary to keep when it leaves: toJSON() and the objectives' counts by minute and hour. */
  export() {
    return { ...this.toJSON(), objectiveCounts: this.objectives.export() };
  }
}

/**
 * A cluster primary's view of its workers' reports: their answers added, a worker that did not
 * answer counted with its last one, and the half hours and objective counts of workers that exited
 * (a crash, a rolling restart) kept, as the metrics keep their counters: counts never go down.
 * What an exited worker leaves is what it handed over as it left (Reports.export()), or, when it
 * could not (killed), what the primary last pulled from it.
 */
class WorkerReports {
  /** specs: the objectives of the running configuration (objectivesOf(settings)). */
  constructor(specs = [], { now = Date.now } = {}) {
    this.last = new Map(); // worker id -> its last {halfHours, objectives}
    this.counts = new Map(); // worker id -> its last objective counts (Objectives.export())
    this.retired = null; // the half hours of exited workers, added up
    this.retiredObjectives = new Objectives(specs, { now }); // their objective counts, added up, ageing as the workers' do
  }

  /** A reload's objectives: those of exited workers kept where the objective stayed the same. */
  configure(specs) {
    this.retiredObjectives.configure(specs);
  }

  /** A worker's newest figures (Reports.export()): an answer to the primary's pull, or its handover. */
  keep(worker, figures) {
    this.last.set(worker.id, { halfHours: figures.halfHours, objectives: figures.objectives, shadow: figures.shadow });
    this.counts.set(worker.id, figures.objectiveCounts);
  }

  /** answers: [{worker, data}], data a worker's reports (or its status, which carries them), undefined when it did not answer. */
  merge(answers) {
    const list = [];
    for (const { worker, data } of answers) {
      if (data !== undefined && data.halfHours !== undefined) {
        this.last.set(worker.id, { halfHours: data.halfHours, objectives: data.objectives, shadow: data.shadow });
      }
      if (this.last.has(worker.id)) list.push(this.last.get(worker.id));
    }
    const halfHours = list.map((r) => r.halfHours);
    if (this.retired !== null) halfHours.push(this.retired);
    return {
      halfHours: mergeHalfHours(halfHours),
      objectives: mergeObjectives([...list.map((r) => r.objectives), this.retiredObjectives.toJSON()]),
      shadow: mergeShadow(list.map((r) => r.shadow)), // an exited worker's shadow counts go with it: they judge a candidate, they bill nothing
    };
  }

  exited(worker) {
    const last = this.last.get(worker.id);
    const counts = this.counts.get(worker.id);
    this.last.delete(worker.id);
    this.counts.delete(worker.id);
    if (last !== undefined) this.retired = mergeHalfHours(this.retired === null ? [last.halfHours] : [last.halfHours, this.retired]);
    if (counts !== undefined) this.retiredObjectives.absorb(counts);
  }
}

module.exports = { Reports, WorkerReports };
