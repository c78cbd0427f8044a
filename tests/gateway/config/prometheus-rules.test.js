'use strict';

// `ged145 config prometheus-rules [FILE]` judged by Prometheus itself: the real promtool checks the
// rules (`promtool check rules`) and runs them on input series (`promtool test rules`): a route
// that fails 2 % of its queries against a 99.9 % objective pages (and tickets), one that fails
// none stays quiet, and the recording rules compute the same ratio and budget as the status page.
// The unit tests the CLI prints with the rules (--unit-tests) pass promtool too, with --by labels;
// the burn rates follow the objective's window, no alert waits on a `for:`, and every runbook_url
// names a section of docs/reports.md.

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
function rulesFor(dir, slo, flags = [], name = 'rules.yml') {
  const config = path.join(dir, 'ged145.json');
  fs.writeFileSync(config, JSON.stringify({ backend: { url: 'http://127.0.0.1:1' }, slo }));
  const r = cli('config', 'prometheus-rules', config, ...flags);
  assert.equal(r.status, 0, r.stderr);
  fs.writeFileSync(path.join(dir, name), r.stdout);
  return r.stdout;
}

function cli(...args) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, GED145_BACKEND_URL: '' } });
}

const DOCS = path.join(__dirname, '..', '..', '..', 'docs', 'reports.md');
const RUNBOOK = `file://${DOCS}`;

const annotations = (severity) => (severity === 'page' ? `
              summary: "ged145 route cust: its error budget burns fast"
              description: "Objective 99.9 % of queries answered within 200 ms over 30 days: `
  + `bad events would spend 2 % of the budget in 1h (14.4x, and over 5m), or 5 % of the budget in 6h (6x, and over 30m)."
              runbook_url: "${RUNBOOK}#runbook-page"` : `
              summary: "ged145 route cust: its error budget burns"
              description: "Objective 99.9 % of queries answered within 200 ms over 30 days: bad events would spend 10 % of the budget in 3d (1x, and over 6h)."
              runbook_url: "${RUNBOOK}#runbook-ticket"`);

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

  it('the unit tests the CLI prints for its rules pass promtool test rules: 2 % against 99.9 % pages, a healthy route does not', () => {
    const sub = path.join(dir, 'shipped');
    fs.mkdirSync(sub);
    const slo = { cust: { objective: 99.9, latencyMs: 200 }, week: { objective: 99, windowDays: 7 }, day: { windowDays: 1 } };
    rulesFor(sub, slo, ['--by', 'site,job'], 'ged145.yml');
    const config = path.join(sub, 'ged145.json');
    const tests = cli('config', 'prometheus-rules', config, '--by', 'site,job', '--unit-tests', 'ged145.yml');
    assert.equal(tests.status, 0, tests.stderr);
    const cases = Object.fromEntries(tests.stdout.split('\n  # ').slice(1).map((c) => [c.slice(0, c.indexOf(',')), c]));
    assert.match(cases['cust: burning'], /^cust: burning, 2 % of its events bad \(20x its budget\)\n[^]*severity: page[^]*severity: ticket/);
    assert.match(cases['cust: healthy'], /^cust: healthy, 0\.05 % of its events bad \(0\.5x its budget\)\n[^]*exp_alerts: \[\]$/);
    assert.doesNotMatch(cases['day: burning'], /severity: ticket/);
    fs.writeFileSync(path.join(sub, 'ged145.test.yml'), tests.stdout);
    const r = promtool('test', 'rules', path.join(sub, 'ged145.test.yml'));
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /SUCCESS/);
    // The same tests against rules that forgot the grouping: the alerts lose their labels, and promtool says so.
    rulesFor(sub, slo, [], 'ged145.yml');
    assert.notEqual(promtool('test', 'rules', path.join(sub, 'ged145.test.yml')).status, 0);
  });

  it('burn rates for the objective\'s window, no for: delay, every instance summed unless --by says, a runbook per alert', () => {
    const week = prometheusRules(objectivesOf({ slo: { wk: { objective: 99, windowDays: 7 } } }));
    assert.match(week, /rate1h\{objective="wk"\} > \(3\.36 \* 0\.01\) and [^\n]*rate5m\{objective="wk"\} > \(3\.36 \* 0\.01\)\) or [^\n]*rate6h[^\n]*> \(1\.4 \* 0\.01\)/);
    assert.match(week, /rate3d\{objective="wk"\} > \(0\.233333333333 \* 0\.01\) and [^\n]*rate6h/);
    const month = fs.readFileSync(path.join(dir, 'rules.yml'), 'utf8');
    assert.match(month, /> \(14\.4 \* 0\.001\)[^\n]*> \(6 \* 0\.001\)/);
    assert.match(month, /rate3d\{objective="cust"\} > \(1 \* 0\.001\)/);
    assert.doesNotMatch(`${week}${month}`, /^\s*for:/m, 'the short window is the wait');
    assert.doesNotMatch(month, /rate1d\{|rate2h\{/, 'the workbook\'s three alerts: 1h/5m, 6h/30m, 3d/6h');
    assert.match(month, /sum by \(objective\) \(rate\(/);
    const day = prometheusRules(objectivesOf({ slo: { d: { windowDays: 1 } } }));
    assert.equal(day.match(/- alert:/g).length, 1, 'a 1-day objective: the page only, no 3-day ticket');
    // Each runbook_url names a section of docs/reports.md (its heading's anchor, as GitHub makes it).
    const anchors = new Set(fs.readFileSync(DOCS, 'utf8').split('\n').filter((l) => /^#+ /.test(l))
      .map((l) => l.replace(/^#+ /, '').toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-')));
    const linked = [...month.matchAll(/runbook_url: "([^"]+)"/g)].map((m) => m[1]);
    assert.equal(linked.length, 2);
    for (const url of linked) {
      assert.ok(url.startsWith(`${RUNBOOK}#`), url);
      assert.ok(anchors.has(url.split('#')[1]), `${url}: no such section in docs/reports.md`);
    }
    const elsewhere = prometheusRules(objectivesOf({ slo: { cust: {} } }), { runbookUrl: 'https://wiki.example/ged145' });
    assert.match(elsewhere, /runbook_url: "https:\/\/wiki\.example\/ged145#runbook-page"/);
  });

  it('without FILE, the rules of the default configuration; bad --by labels are refused', () => {
    const r = cli('config', 'prometheus-rules');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^# No objective is configured \(slo\): no rule\.\ngroups: \[\]$/m);
    const file = path.join(dir, 'default.yml');
    fs.writeFileSync(file, r.stdout);
    assert.equal(promtool('check', 'rules', file).status, 0);
    for (const [label, why] of [['result', /a label the rules set or read themselves/], ['9x', /not a Prometheus label name/]]) {
      const bad = cli('config', 'prometheus-rules', '--by', label);
      assert.equal(bad.status, 2, bad.stderr);
      assert.match(bad.stderr, why);
    }
    assert.equal(cli('config', 'schema', '--by', 'site').status, 2, 'a flag of prometheus-rules is not silently ignored elsewhere');
  });

  it('the quiet expectation with a burning route fails: promtool names the alerts that fired', () => {
    fs.writeFileSync(path.join(dir, 'wrong.test.yml'), unitTest(20, []));
    const wrong = promtool('test', 'rules', path.join(dir, 'wrong.test.yml'));
    assert.notEqual(wrong.status, 0);
    assert.match(`${wrong.stdout}${wrong.stderr}`, /severity="page"/);
  });
});
