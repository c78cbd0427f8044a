'use strict';

// `ged145 config prometheus-rules FILE` judged by Prometheus itself: the real promtool checks the
// rules (`promtool check rules`) and runs them on input series (`promtool test rules`): a route
// that fails 2 % of its queries against a 99.9 % objective pages (and tickets), one that fails
// none stays quiet, and the recording rules compute the same ratio and budget as the status page.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tmpDir } = require('../../helpers/tmp');
const { prometheusRules } = require('../../../gateway/config/prometheus-rules');
const { objectivesOf } = require('../../../gateway/config/slo');

const BIN = path.join(__dirname, '..', '..', '..', 'bin', 'ged145.js');

function promtool(...args) {
  return spawnSync('promtool', args, { encoding: 'utf8' });
}

/** The rules the CLI prints for a config file with these slo settings, written to dir/rules.yml. */
function rulesFor(dir, slo) {
  const config = path.join(dir, 'ged145.json');
  fs.writeFileSync(config, JSON.stringify({ backend: { url: 'http://127.0.0.1:1' }, slo }));
  const r = spawnSync(process.execPath, [BIN, 'config', 'prometheus-rules', config], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  fs.writeFileSync(path.join(dir, 'rules.yml'), r.stdout);
  return r.stdout;
}

const annotations = (severity) => {
  const over = severity === 'page' ? '14.4x the budget over 1h and 5m' : '3x the budget over 1d and 2h';
  return `
              summary: "route cust: its error budget burns ${severity === 'page' ? 'fast' : 'steadily'}"
              description: "Objective 99.9% of queries answered within 200 ms over 30 days: bad events are above ${over} (or the next pair); `
    + 'see /status and docs/reports.md"';
};

/** A promtool test: 70 minutes of 1000 events a minute of which badPerMinute are bad, and what should fire at the end. */
const unitTest = (badPerMinute, alerts, extra = '') => `
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'ged145_objective_events_total{objective="cust",result="good"}'
        values: '0+${1000 - badPerMinute}x90'
      - series: 'ged145_objective_events_total{objective="cust",result="bad"}'
        values: '0+${badPerMinute}x90'
    alert_rule_test:
      - eval_time: 70m
        alertname: Ged145ObjectiveBudgetBurn
        exp_alerts:${alerts.length === 0 ? ' []' : alerts.map((severity) => `
          - exp_labels:
              severity: ${severity}
              objective: cust
            exp_annotations:${annotations(severity)}`).join('')}
${extra}`;

describe('ged145 config prometheus-rules, checked with promtool', function () {
  this.timeout(20_000);
  let dir;

  before(() => {
    assert.equal(promtool('--version').status, 0, 'promtool is needed (apt-get install prometheus; .ci/run does it)');
    dir = tmpDir();
    rulesFor(dir, { cust: { objective: 99.9, latencyMs: 200 } }); // the CLI, once: the rules the runs below use
  });

  it('the rules pass promtool check rules, for one objective and for several; none is an empty file it accepts', () => {
    let r = promtool('check', 'rules', path.join(dir, 'rules.yml'));
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(`${r.stdout}${r.stderr}`, /SUCCESS: 10 rules found/, '7 ratios, a budget and two alerts');
    const several = path.join(dir, 'several.yml');
    const text = prometheusRules(objectivesOf({ slo: { cust: {}, 'bal"x': { objective: 99, latencyMs: 100, windowDays: 7 } } }));
    assert.match(text, /objective="bal\\"x"/, 'a route name is escaped in PromQL');
    assert.match(text, /\[7d\]/);
    fs.writeFileSync(several, text);
    r = promtool('check', 'rules', several);
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(`${r.stdout}${r.stderr}`, /SUCCESS: 13 rules found/);
    const none = path.join(dir, 'none.yml');
    fs.writeFileSync(none, prometheusRules([]));
    r = promtool('check', 'rules', none);
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  });

  it('2 % bad against 99.9 % pages and tickets, 0.5 % only tickets, none is quiet; the ratio and the budget are recorded', () => {
    fs.writeFileSync(path.join(dir, 'burning.test.yml'), unitTest(20, ['page', 'ticket'], `    promql_expr_test:
      - expr: round(ged145:objective_error_ratio:rate5m, 0.0001)
        eval_time: 70m
        exp_samples:
          - labels: '{objective="cust"}'
            value: 0.02
      - expr: round(ged145:objective_budget_left, 0.01)
        eval_time: 70m
        exp_samples:
          - labels: '{objective="cust",window="30d"}'
            value: -19
`));
    fs.writeFileSync(path.join(dir, 'ticket.test.yml'), unitTest(5, ['ticket'])); // 5x: over 3x, under 6x and 14.4x
    fs.writeFileSync(path.join(dir, 'quiet.test.yml'), unitTest(0, []));
    const r = promtool('test', 'rules', ...['burning', 'ticket', 'quiet'].map((n) => path.join(dir, `${n}.test.yml`)));
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.equal(`${r.stdout}${r.stderr}`.match(/SUCCESS/g).length, 3);
  });

  it('the quiet expectation with a burning route fails: promtool names the alerts that fired', () => {
    fs.writeFileSync(path.join(dir, 'wrong.test.yml'), unitTest(20, []));
    const wrong = promtool('test', 'rules', path.join(dir, 'wrong.test.yml'));
    assert.notEqual(wrong.status, 0);
    assert.match(`${wrong.stdout}${wrong.stderr}`, /severity="page"/);
  });
});
