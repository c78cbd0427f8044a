'use strict';

// The figures of a cluster's workers at the primary (gateway/ops/cluster.js): their metrics
// summed (cluster-metrics.js), their half-hour views and objectives added (reports.js), and what
// a worker that leaves takes with it: nothing. A worker that drains hands its last figures over
// before it exits (FIGURES, gateway/ops/ipc.js); the primary also pulls every worker's every
// PULL_MS, so that one that is killed or crashes loses at most what it counted in that time, and
// its exit is counted in ged145_worker_figures_lost_total and logged with the seconds lost.

const { SummedMetrics } = require('./cluster-metrics');
const { WorkerReports } = require('./reports');
const { objectivesOf } = require('../config/slo');

/** How often the primary takes every worker's figures: what a worker that is killed can lose. */
const PULL_MS = 5000;
/** How long an exited worker's channel may stay open before its figures are settled without what is still in it. */
const LAST_MESSAGES_MS = 1000;

class WorkerFigures {
  /** ask(worker, what): a promise of its answer (undefined when none came); settings: the running ones, as JSON. */
  constructor({ ask, log, settings }) {
    this.ask = ask;
    this.log = log;
    this.metrics = new SummedMetrics();
    this.reports = new WorkerReports(objectivesOf(settings));
    this.pulledAt = new Map(); // worker id -> when the primary last had its figures (its READY at first)
    this.leaving = new Set(); // ids of workers that handed their last figures over
    this.timer = null;
    this.pulling = false;
  }

  /** Pulls the workers' figures every PULL_MS; workers(): those there are now. */
  start(workers) {
    this.timer = setInterval(() => this.pull(workers()), PULL_MS).unref();
  }

  stop() {
    clearInterval(this.timer);
  }

  /** A worker is up: it has counted nothing the primary has not. */
  up(worker) {
    this.pulledAt.set(worker.id, Date.now());
  }

  /** A reload's objectives: those of exited workers kept where the objective stayed the same. */
  configure(settings) {
    this.reports.configure(objectivesOf(settings));
  }

  async pull(workers) {
    if (this.pulling) return;
    this.pulling = true;
    try {
      await Promise.all(workers.map(async (w) => {
        const figures = await this.ask(w, 'figures');
        if (figures !== undefined && !this.leaving.has(w.id)) this.keep(w, figures);
      }));
    } finally {
      this.pulling = false;
    }
  }

  keep(worker, { metrics, reports }) {
    this.metrics.keep(worker, metrics);
    this.reports.keep(worker, reports);
    this.pulledAt.set(worker.id, Date.now());
  }

  /** FIGURES: a worker's last figures, once its gateway has drained: they stay in the sums after it exits. */
  handedOver(worker, msg) {
    this.keep(worker, msg);
    this.leaving.add(worker.id);
  }

  /**
   * An exited worker's figures into the sums of exited workers, once its channel is read to its
   * end (its FIGURES may still be in it when its exit is seen). One that handed none over is
   * counted as lost, with what it counted since the primary last had its figures; quiet: the
   * whole gateway is stopping.
   */
  exited(worker, { quiet = false } = {}) {
    let done = false;
    const settle = () => {
      if (done) return;
      done = true;
      const handed = this.leaving.delete(worker.id);
      const since = this.pulledAt.get(worker.id);
      this.pulledAt.delete(worker.id);
      const lost = !handed && since !== undefined; // a worker that never came up counted nothing
      this.metrics.retire(worker, { lost });
      this.reports.exited(worker);
      if (lost && !quiet) {
        this.log.warn(`worker ${worker.process.pid} exited without handing over its figures: what it counted in its last `
          + `${((Date.now() - since) / 1000).toFixed(1)} s is missing from /metrics and the reports (ged145_worker_figures_lost_total)`);
      }
    };
    if (!worker.isConnected()) {
      settle();
      return;
    }
    worker.once('disconnect', settle);
    setTimeout(settle, LAST_MESSAGES_MS).unref();
  }
}

module.exports = { WorkerFigures };
