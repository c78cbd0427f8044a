'use strict';

// The metrics every query updates, kept the cheap way and read by prom-client's registry at
// scrape time (docs/performance.md). prom-client's own Counter.inc and Histogram.observe
// validate the labels and hash them into a key on every call: four times per query, about 4 us of
// a query's 30-40 us at concurrency 32. Here a query costs a few additions on a record its caller
// keeps; the registry gets the same figures, in the same exposition, when it asks.
//
//   TallyCounter:   a prom-client Counter whose counts are added up per label set between scrapes
//                   and handed to it (inc by the sum) in its collect(), the hook prom-client offers.
//   TallyHistogram: a histogram in a Float64Array per label set, registered with the registry as
//                   a metric of its own: get() returns what prom-client's Histogram.get() returns
//                   for the same observations (tests/gateway/ops/tally.test.js compares the two).

const client = require('prom-client');

class TallyCounter extends client.Counter {
  constructor(options) {
    super({
      ...options,
      collect() {
        for (const t of this.tallies) {
          if (t.n === 0) continue;
          this.inc(t.labels, t.n);
          t.n = 0;
        }
      },
    });
    this.tallies = [];
  }

  /** The record to count one label set on: `record.n++` per event. */
  tally(...values) {
    const labels = {};
    this.labelNames.forEach((name, i) => { labels[name] = values[i]; });
    const t = { labels, n: 0 };
    this.tallies.push(t);
    return t;
  }
}

class TallyHistogram {
  constructor({
    name, help, labelNames = [], buckets, registers = [client.register],
  }) {
    this.name = name;
    this.help = help;
    this.type = 'histogram';
    this.aggregator = 'sum';
    this.labelNames = labelNames;
    this.upperBounds = [...buckets];
    this.series = new Map(); // label values joined -> {labels, counts (per bucket, +Inf last), sum, count}
    if (labelNames.length === 0) this.labels(); // as prom-client's: a histogram without labels is exposed at zero from the start
    for (const r of registers) r.registerMetric(this);
  }

  /** The series of one label set, made once: observe(v) on it costs a bucket search and three additions. */
  labels(...values) {
    const key = values.join('\u0000');
    let s = this.series.get(key);
    if (s === undefined) {
      const labels = {};
      this.labelNames.forEach((n, i) => { labels[n] = values[i]; });
      s = new Series(labels, this.upperBounds);
      this.series.set(key, s);
    }
    return s;
  }

  observe(value) {
    this.labels().observe(value);
  }

  /** As prom-client's Histogram.get(): cumulative buckets, then +Inf, _sum and _count, per label set. */
  get() {
    const values = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        acc += s.counts[i];
        values.push({ value: acc, labels: { le: this.upperBounds[i], ...s.labels }, metricName: bucket });
      }
      values.push({ value: s.count, labels: { le: '+Inf', ...s.labels }, metricName: bucket });
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return {
      name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator,
    };
  }

  reset() {
    this.series.clear();
  }
}

class Series {
  constructor(labels, upperBounds) {
    this.labels = labels;
    this.upperBounds = upperBounds;
    this.counts = new Float64Array(upperBounds.length + 1);
    this.sum = 0;
    this.count = 0;
  }

  observe(value) {
    const bounds = this.upperBounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

module.exports = { TallyCounter, TallyHistogram };
