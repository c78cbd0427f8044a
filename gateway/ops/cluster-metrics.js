'use strict';

// A cluster's /metrics (gateway/ops/cluster.js): the sum of every worker's. Counters and
// histograms never go down when summed: a worker that exits leaves its last known values in the
// sum (the ones it handed over as it left, or the primary's last pull or scrape of it), and one
// that does not answer counts with its last ones. The primary's own counter of workers whose
// figures it could not take over is added to the sum.

const { AggregatorRegistry, Counter, Registry } = require('prom-client');

/** Metric types whose value only grows: what a worker that exits leaves behind. */
const CUMULATIVE = new Set(['counter', 'histogram']);

const cumulative = (list) => list.filter((m) => CUMULATIVE.has(m.type));

/**
 * Lists of metrics as JSON summed into one, at once: aggregate() builds each summed metric
 * synchronously, so that a retirement is in the sum before any scrape can read the sum without it.
 */
const sumNow = (lists) => AggregatorRegistry.aggregate(lists).getMetricsAsArray().map((m) => m.get());

class SummedMetrics {
  constructor({ prefix = 'ged145_' } = {}) {
    this.last = new Map(); // worker id -> its metrics as JSON, the newest the primary has
    this.retired = []; // the cumulative metrics of exited workers, summed into one list
    this.own = new Registry();
    this.lost = new Counter({
      name: `${prefix}worker_figures_lost_total`,
      help: 'Workers that exited without handing over their figures (killed, crashed): '
        + 'what each counted after the primary last pulled them, at most 5 s, is missing from the sums',
      registers: [this.own],
    });
  }

  /** The newest metrics of a worker: an answer to a scrape or a pull, or its handover as it leaves. */
  keep(worker, list) {
    this.last.set(worker.id, list);
  }

  /** A worker exited: its last counters stay in the sum; lost: it left without handing them over. */
  retire(worker, { lost = false } = {}) {
    const last = this.last.get(worker.id);
    this.last.delete(worker.id);
    if (lost) this.lost.inc();
    if (last !== undefined) this.retired = sumNow([this.retired, cumulative(last)]);
  }

  /** The exposition text of the sum; answers: [{worker, data}], data undefined for a worker that did not answer. */
  async text(answers) {
    const own = await this.own.getMetricsAsJSON();
    const lists = [this.retired, own];
    for (const { worker, data } of answers) {
      if (data !== undefined) {
        this.keep(worker, data);
        lists.push(data);
      } else if (this.last.has(worker.id)) {
        lists.push(cumulative(this.last.get(worker.id)));
      }
    }
    return AggregatorRegistry.aggregate(lists).metrics();
  }
}

module.exports = { SummedMetrics };
