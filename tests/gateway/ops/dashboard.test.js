'use strict';

// docs/grafana-dashboard.json only names metrics a gateway exports.

const assert = require('node:assert/strict');
const path = require('node:path');
const { startStack } = require('../../helpers/stack');

describe('Grafana dashboard', () => {
  it('every metric its panels query is one the gateway exports', async () => {
    const dashboard = require(path.join(__dirname, '..', '..', '..', 'docs', 'grafana-dashboard.json'));
    const exprs = dashboard.panels.flatMap((p) => (p.targets || []).map((t) => t.expr));
    const names = new Set(exprs.flatMap((e) => e.match(/\b(ged145|process|nodejs)_[a-z_]+/g)).map((n) => n.replace(/_bucket$/, '')));
    assert.ok(names.size >= 12, [...names].join());
    const stack = await startStack({ gateway: { cache: { ttlMs: 1000 } } });
    try {
      const text = await stack.gw.metrics();
      const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
      for (const n of names) assert.ok(exported.has(n), `${n} is not exported`);
    } finally {
      await stack.stop();
    }
  });

  it('every panel filters by job and instance, there is a per-instance view for the A and B hosts, and rates have a rate unit', () => {
    const dashboard = require(path.join(__dirname, '..', '..', '..', 'docs', 'grafana-dashboard.json'));
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

  it('counts as failed what the status page counts as failed, and app_error apart, in the page\'s colours', () => {
    const fs = require('node:fs');
    const { LABEL, FAILED_LABELS } = require('../../../gateway/backend/outcome');
    const dashboard = require(path.join(__dirname, '..', '..', '..', 'docs', 'grafana-dashboard.json'));
    const page = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'gateway', 'ops', 'page', 'status.js'), 'utf8');
    assert.match(page, /const FAILED = new Set\(FAILED_LABELS\)/, 'the page reads outcome.js\'s list (status-page.js puts it in)');
    const pageFailed = [...FAILED_LABELS].sort();
    const pageColours = Object.fromEntries([...page.match(/const COLORS = \{([^}]*)\}/)[1].matchAll(/(\w+): '(#[0-9a-f]{6})'/g)].map((m) => [m[1], m[2]]));
    assert.ok(!pageFailed.includes(LABEL.APP_ERROR));
    const exprs = dashboard.panels.flatMap((p) => (p.targets || []).map((t) => t.expr));
    const failedSets = exprs.map((e) => e.match(/outcome=~"([^"]+)"/)).filter(Boolean).map((m) => m[1].split('|').sort());
    assert.ok(failedSets.length > 0);
    for (const set of failedSets) assert.deepEqual(set, pageFailed);
    assert.ok(exprs.some((e) => e.includes(`outcome="${LABEL.APP_ERROR}"`)), 'app_error has a line of its own');
    const byOutcome = dashboard.panels.find((p) => p.targets && p.targets.some((t) => t.legendFormat === '{{outcome}}'));
    const colours = Object.fromEntries(byOutcome.fieldConfig.overrides.map((o) => [o.matcher.options, o.properties[0].value.fixedColor]));
    assert.deepEqual(colours, pageColours);
    for (const label of Object.values(LABEL)) assert.ok(colours[label], `${label} has a colour`);
  });
});
