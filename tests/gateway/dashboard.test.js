'use strict';

// docs/grafana-dashboard.json only names metrics a gateway exports.

const assert = require('node:assert/strict');
const path = require('node:path');
const { startStack } = require('../helpers/stack');

describe('Grafana dashboard', () => {
  it('every metric its panels query is one the gateway exports', async () => {
    const dashboard = require(path.join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json'));
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
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
});
