'use strict';

// The tallies that carry the per-query metrics (gateway/ops/tally.js) expose what prom-client's
// own Counter and Histogram expose for the same events: the same text, line for line, and the
// same values to a cluster's aggregation (getMetricsAsJSON).

const assert = require('node:assert/strict');
const client = require('prom-client');
const { TallyCounter, TallyHistogram } = require('../../../gateway/ops/tally');

const BUCKETS = [0.0005, 0.001, 0.01, 0.1, 0.25];
const VALUES = [0.0001, 0.0005, 0.0007, 0.001, 0.05, 0.1, 0.2499, 0.25, 0.3, 12, 0];

/** getMetricsAsJSON without what only prom-client's own classes carry (exemplar: null), in one key order. */
const json = async (registry) => (await registry.getMetricsAsJSON()).map((m) => ({
  ...m, values: m.values.map(({ value, metricName, labels }) => ({ value, metricName, labels })),
}));

describe('tallies (unit)', () => {
  it('a histogram exposes what prom-client\'s Histogram does, with labels and without, observed or not', async () => {
    const [theirs, ours] = [new client.Registry(), new client.Registry()];
    const a = new client.Histogram({ name: 'd', help: 'h', labelNames: ['outcome'], buckets: BUCKETS, registers: [theirs] });
    const b = new TallyHistogram({ name: 'd', help: 'h', labelNames: ['outcome'], buckets: BUCKETS, registers: [ours] });
    const a0 = new client.Histogram({ name: 'e', help: 'h', buckets: BUCKETS, registers: [theirs] });
    const b0 = new TallyHistogram({ name: 'e', help: 'h', buckets: BUCKETS, registers: [ours] });
    assert.equal(await ours.metrics(), await theirs.metrics(), 'before any observation');
    VALUES.forEach((v, i) => {
      const outcome = i % 3 === 0 ? 'deadline' : 'ok';
      a.labels(outcome).observe(v);
      b.labels(outcome).observe(v);
      a0.observe(v);
      b0.observe(v);
    });
    assert.equal(await ours.metrics(), await theirs.metrics());
    assert.deepEqual(await json(ours), await json(theirs));
  });

  it('a counter tallied between scrapes gives the totals prom-client\'s inc() gives, scrape after scrape', async () => {
    const [theirs, ours] = [new client.Registry(), new client.Registry()];
    const a = new client.Counter({ name: 'q', help: 'h', labelNames: ['subtype', 'outcome'], registers: [theirs] });
    const b = new TallyCounter({ name: 'q', help: 'h', labelNames: ['subtype', 'outcome'], registers: [ours] });
    const tallies = { ok: b.tally('x', 'ok'), stale: b.tally('x', 'stale') };
    for (const round of [3, 0, 5]) {
      for (let i = 0; i < round; i++) {
        a.labels('x', 'ok').inc();
        tallies.ok.n++;
      }
      if (round === 5) {
        a.labels('x', 'stale').inc();
        tallies.stale.n++;
      }
      assert.equal(await ours.metrics(), await theirs.metrics(), `after a round of ${round}`);
    }
    assert.deepEqual(await json(ours), await json(theirs));
  });
});
