'use strict';

// `ged145 config prometheus-rules [FILE]`: the Prometheus recording and alerting rules for the
// objectives FILE configures (config `slo`), computed from ged145_objective_events_total as the
// status page computes them in the process (gateway/ops/objectives.js; windows and alerts in
// slo.js), over the real windows:
//
//   ged145:objective_error_ratio:rate<w>   bad events / all events over w, per objective
//   ged145:objective_budget_left            share of the error budget left over the objective's window
//   Ged145ObjectiveBudgetBurn                the SRE workbook's multiwindow, multi-burn-rate alerts,
//                                            their burn rates computed for the objective's window:
//     severity page:   2 % of the budget in 1h (and 5m), or 5 % in 6h (and 30m)
//     severity ticket: 10 % of the budget in 3d (and 6h)
//
// Events are summed by objective, over every instance and site, unless `by` names labels to keep
// apart (a site, a Prometheus job). No alert has a `for:`: its short window already waits for a
// burn to last, and stops the alert soon after it ends. Each alert links its runbook section in
// docs/reports.md. unitTests() writes a promtool unit test file for the same objectives.
//
// The output is YAML written by hand (the file is small and its shape fixed); tests check it with
// the real `promtool check rules` and `promtool test rules`.

const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { WINDOWS, alertPolicy } = require('./slo');

const METRIC = 'ged145_objective_events_total';
const RATIO = 'ged145:objective_error_ratio';
const ALERT = 'Ged145ObjectiveBudgetBurn';
/** The docs page this ged145 ships with, where each alert has its runbook section. */
const DEFAULT_RUNBOOK_URL = pathToFileURL(path.join(__dirname, '..', '..', 'docs', 'reports.md')).href;
/** The section of docs/reports.md per severity (its heading's anchor). */
const RUNBOOK_ANCHORS = Object.freeze({ page: 'runbook-page', ticket: 'runbook-ticket' });
/** Labels the rules set or read themselves: grouping by them would break the rules. */
const RESERVED_LABELS = new Set(['objective', 'result', 'severity', 'window']);
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A PromQL string literal's content: the label values here are route names from the config. */
const q = (s) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
/** A YAML double-quoted scalar. */
const y = (s) => `"${String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
/** A number as PromQL and YAML write it (no exponent for the small budgets here). */
const num = (n) => String(Number(n.toPrecision(12)));
const percent = (share) => `${num(share * 100)} %`;

/** The problem with grouping labels given by an operator, or null. */
function groupingProblem(labels) {
  for (const l of labels) {
    if (!LABEL_NAME.test(l) || l.startsWith('__')) return `'${l}' is not a Prometheus label name`;
    if (RESERVED_LABELS.has(l)) return `'${l}' is a label the rules set or read themselves`;
  }
  return null;
}

function recordingRules(group) {
  const out = [];
  for (const w of Object.keys(WINDOWS)) {
    out.push(`      - record: ${RATIO}:rate${w}`);
    out.push(`        expr: sum by (${group}) (rate(${METRIC}{result="bad"}[${w}])) / sum by (${group}) (rate(${METRIC}[${w}]))`);
  }
  return out;
}

/** What an alert says: one line, and the pairs it reads. */
function annotations(o, severity, alerts, runbookUrl) {
  const pairs = alerts.map((a) => `${percent(a.budgetShare)} of the budget in ${a.long} (${num(a.factor)}x, and over ${a.short})`);
  return [
    '        annotations:',
    `          summary: ${y(`ged145 route ${o.route}: ${severity === 'page' ? 'its error budget burns fast' : 'its error budget burns'}`)}`,
    `          description: ${y(`Objective ${o.objective} % of queries answered within ${o.latencyMs} ms over ${o.windowDays} days: `
      + `bad events would spend ${pairs.join(', or ')}.`)}`,
    `          runbook_url: ${y(`${runbookUrl}#${RUNBOOK_ANCHORS[severity]}`)}`,
  ];
}

/** The rules of one objective: its budget left over its window, and its alerts. */
function objectiveRules(o, group, runbookUrl) {
  const sel = `objective="${q(o.name)}"`;
  const budget = num(1 - o.objective / 100);
  const window = `${o.windowDays}d`;
  const out = [
    `      - record: ged145:objective_budget_left`,
    `        expr: 1 - (sum by (${group}) (increase(${METRIC}{${sel},result="bad"}[${window}]))`
      + ` / sum by (${group}) (increase(${METRIC}{${sel}}[${window}]))) / ${budget}`,
    `        labels:`,
    `          objective: ${y(o.name)}`,
    `          window: ${y(window)}`,
  ];
  const policy = alertPolicy(o.windowDays);
  for (const severity of ['page', 'ticket']) {
    const alerts = policy.filter((a) => a.severity === severity);
    if (alerts.length === 0) continue; // a window too short for the ticket's 3 days (slo.js)
    const pairs = alerts.map((a) => {
      const over = `${num(a.factor)} * ${budget}`;
      return `(${RATIO}:rate${a.long}{${sel}} > (${over}) and ${RATIO}:rate${a.short}{${sel}} > (${over}))`;
    });
    out.push(
      `      - alert: ${ALERT}`,
      `        expr: ${pairs.join(' or ')}`,
      '        labels:',
      `          objective: ${y(o.name)}`,
      `          severity: ${severity}`,
      ...annotations(o, severity, alerts, runbookUrl),
    );
  }
  return out;
}

/**
 * The rules file (YAML) for objectives [{name, route, objective, latencyMs, windowDays}]
 * (objectivesOf(config)). by: labels to keep apart besides the objective (default none: every
 * instance and site summed); runbookUrl: the page with the runbook sections.
 */
function prometheusRules(objectives, { by = [], runbookUrl = DEFAULT_RUNBOOK_URL } = {}) {
  const lines = [
    '# ged145 objectives: generated by `ged145 config prometheus-rules`; regenerate after changing slo.',
  ];
  if (objectives.length === 0) return `${lines[0]}\n# No objective is configured (slo): no rule.\ngroups: []\n`;
  const group = ['objective', ...by].join(', ');
  lines.push('groups:', '  - name: ged145-objectives-ratios', '    rules:', ...recordingRules(group));
  for (const o of objectives) {
    lines.push(`  - name: ${y(`ged145-objective-${o.name}`)}`, '    rules:', ...objectiveRules(o, group, runbookUrl));
  }
  return `${lines.join('\n')}\n`;
}

/** Events a minute in the unit tests: enough that half of a 99.999 % budget is a whole event or more. */
const EVENTS_PER_MINUTE = 1_000_000;

/**
 * A promtool unit test file for the rules prometheusRules() writes (rulesFile: their path, from
 * the test file's directory): per objective, after 70 minutes of traffic, bad events at 20 times
 * its budget (2 % against 99.9 %) fire every alert they are over (both, for 30 days), and bad
 * events at half the burn rate of its most patient alert (half its budget, for 30 days) fire none.
 */
function unitTests(objectives, { by = [], runbookUrl = DEFAULT_RUNBOOK_URL, rulesFile }) {
  const tests = [];
  const extra = by.map((l) => `,${l}="unit-test"`).join('');
  for (const o of objectives) {
    const budget = 1 - o.objective / 100;
    const policy = alertPolicy(o.windowDays);
    const lowest = Math.min(...policy.map((a) => a.factor)); // healthy: half the burn the most patient alert waits for
    for (const [what, share] of [['burning', Math.min(1, 20 * budget)], ['healthy', (budget * lowest) / 2]]) {
      const bad = EVENTS_PER_MINUTE * share;
      const burn = share / budget;
      const firing = ['page', 'ticket'].filter((s) => policy.some((a) => a.severity === s && burn > a.factor));
      const sel = `objective="${q(o.name)}"`.replace(/'/g, "''"); // in a YAML single-quoted scalar
      tests.push(
        `  # ${o.name.replace(/[^\x20-\x7e]/g, '?')}: ${what}, ${Number((share * 100).toPrecision(3))} % of its events bad (${Number(burn.toPrecision(3))}x its budget)`,
        '  - interval: 1m',
        '    input_series:',
        `      - series: '${METRIC}{${sel},result="good"${extra}}'`,
        `        values: '0+${num(EVENTS_PER_MINUTE - bad)}x90'`,
        `      - series: '${METRIC}{${sel},result="bad"${extra}}'`,
        `        values: '0+${num(bad)}x90'`,
        '    alert_rule_test:',
        '      - eval_time: 70m',
        `        alertname: ${ALERT}`,
        `        exp_alerts:${firing.length === 0 ? ' []' : ''}`,
      );
      for (const severity of firing) {
        tests.push(
          '          - exp_labels:',
          `              objective: ${y(o.name)}`,
          `              severity: ${severity}`,
          ...by.map((l) => `              ${l}: unit-test`),
          '            exp_annotations:',
          ...annotations(o, severity, policy.filter((a) => a.severity === severity), runbookUrl).slice(1).map((l) => `      ${l}`),
        );
      }
    }
  }
  return [
    '# ged145 objectives: promtool unit tests for the rules of `ged145 config prometheus-rules`;',
    '# run with `promtool test rules FILE`.',
    `rule_files: [${y(rulesFile)}]`,
    'evaluation_interval: 1m',
    `tests:${tests.length === 0 ? ' []' : ''}`,
    ...tests,
    '',
  ].join('\n');
}

module.exports = { prometheusRules, unitTests, groupingProblem };
