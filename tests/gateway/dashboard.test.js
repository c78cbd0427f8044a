'use strict';

// docs/grafana-dashboard.json only names metrics a gateway exports.

const assert = require('node:assert/strict');
const path = require('node:path');
const { startStack } = require('../helpers/stack');

describe('Grafana dashboard', () => {
  it('every metric its panels query is one the gateway exports', async () => {
    const dashboard = require(path.join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json'));
    const exprs = dashboard.panels.flatMap((p) => (p.targets || []).map((t) => t.expr));
    const names = new Set(exprs.flatMap((e) => e.match(/\b(ged145|process|nodejs)_[a-z_]+/g)).map((n) => n.replace(/_bucket$/, '')));
    assert.ok(names.size >= 12, [...names].join());
    const stack = await startStack({ gateway: { cache: { ttlMs: 1000 } } });
    try {
      const text = await stack.gateway.metrics.text();
      const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
      for (const n of names) assert.ok(exported.has(n), `${n} is not exported`);
    } finally {
      await stack.stop();
    }
  });

  it('every panel filters by job and instance, there is a per-instance view for the A and B hosts, and rates have a rate unit', () => {
    const dashboard = require(path.join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json'));
    assert.deepEqual(dashboard.templating.list.map((v) => v.name), ['datasource', 'job', 'instance']);
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    for (const p of panels) {
      for (const { expr } of p.targets) {
        const selectors = [...expr.matchAll(/\b(?:ged145|process|nodejs)_[a-z_]+(\{[^}]*\})?/g)];
        assert.ok(selectors.length > 0, expr);
        for (const [whole, labels] of selectors) assert.match(labels || '', /job=~"\$job",instance=~"\$instance"/, `${p.title}: ${whole}`);
      }
      const rate = p.targets.some((t) => /\brate\(/.test(t.expr)) && !/CPU|latency|round trip/i.test(p.title);
      if (rate) assert.ok(['reqps', 'cps', 'ops'].includes(p.fieldConfig.defaults.unit), `${p.title}: unit ${p.fieldConfig.defaults.unit}`);
    }
    assert.ok(panels.filter((p) => p.targets.some((t) => /by \(instance/.test(t.expr))).length >= 4, 'per-instance panels');
  });
});
