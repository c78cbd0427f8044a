'use strict';

// The objectives a configuration asks for (config `slo`, docs/reports.md), and the alert policy
// they are watched with: the SRE workbook's multi-window, multi-burn-rate alerts, their burn
// rates computed for each objective's window. The process
// reads them in gateway/ops/objectives.js, Prometheus through the rules prometheus-rules.js writes.

const { SCHEMA, defaultsOf } = require('./schema');

/** The windows burn rates are read over, in minutes. */
const WINDOWS = Object.freeze({
  '5m': 5, '30m': 30, '1h': 60, '2h': 120, '6h': 360, '1d': 1440, '3d': 4320,
});
/**
 * The alerts, as the SRE workbook writes them ("Alerting on SLOs", multiwindow, multi-burn-rate):
 * each fires when the share of the budget it names would be spent over its long window, and the
 * short window (a twelfth of the long one) still burns at that rate, so that an alert stops soon
 * after the burn does and needs no `for:` delay on top.
 */
const ALERTS = Object.freeze([
  { severity: 'page', budgetShare: 0.02, long: '1h', short: '5m' },
  { severity: 'page', budgetShare: 0.05, long: '6h', short: '30m' },
  { severity: 'ticket', budgetShare: 0.1, long: '3d', short: '6h' },
]);

/**
 * The alerts of an objective counted over windowDays: [{severity, budgetShare, long, short,
 * factor}], factor being the burn rate that spends budgetShare of the budget in the long window
 * (budget share * window period / alert window: 14.4, 6 and 1 for 30 days; 3.36, 1.4 and 0.233
 * for 7). An alert whose long window is longer than the objective's window is left out: it would
 * judge more time than the budget is counted over.
 */
function alertPolicy(windowDays) {
  const periodMinutes = windowDays * 1440;
  return ALERTS.filter((a) => WINDOWS[a.long] <= periodMinutes).map((a) => ({
    ...a, factor: Number(((a.budgetShare * periodMinutes) / WINDOWS[a.long]).toPrecision(12)),
  }));
}

/** config.slo ({route: {objective, latencyMs, windowDays}}) as [{name, route, objective, latencyMs, windowDays}], defaults filled, by name. */
function objectivesOf(config) {
  const defaults = defaultsOf(SCHEMA.properties.slo.additionalProperties);
  return Object.entries(config.slo || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([route, s]) => ({
    name: route, route, ...defaults, ...s,
  }));
}

module.exports = { WINDOWS, alertPolicy, objectivesOf };
