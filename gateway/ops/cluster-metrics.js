'use strict';

// A cluster's /metrics (gateway/ops/cluster.js): the sum of every worker's. Counters and
// histograms never go down when summed: a worker that exits leaves its last scraped values in the
// sum, and one that does not answer counts with its last ones.

const { AggregatorRegistry } = require('prom-client');

/** Metric types whose value only grows: what a worker that exits leaves behind. */
const CUMULATIVE = new Set(['counter', 'histogram']);

const cumulative = (list) => list.filter((m) => CUMULATIVE.has(m.type));

class SummedMetrics {
  constructor() {
    this.lastScrape = new Map(); // worker id -> its metrics as JSON, from the last scrape it answered
    this.retired = []; // the cumulative metrics of exited workers, summed into one list
  }

  /** A worker exited: its last counters stay in the sum. */
  async retire(worker) {
    const last = this.lastScrape.get(worker.id);
    this.lastScrape.delete(worker.id);
    if (last === undefined) return;
    this.retired = await AggregatorRegistry.aggregate([this.retired, cumulative(last)]).getMetricsAsJSON();
  }

  /** The exposition text of the sum; answers: [{worker, data}], data undefined for a worker that did not answer. */
  async text(answers) {
    const lists = [this.retired];
    for (const { worker, data } of answers) {
      if (data !== undefined) {
        this.lastScrape.set(worker.id, data);
        lists.push(data);
      } else if (this.lastScrape.has(worker.id)) {
        lists.push(cumulative(this.lastScrape.get(worker.id)));
      }
    }
    return AggregatorRegistry.aggregate(lists).metrics();
  }
}

module.exports = { SummedMetrics };
