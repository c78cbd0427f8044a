'use strict';

// The objectives a configuration asks for (config `slo`, docs/reports.md), and the alert policy
// they are watched with: the SRE workbook's multi-window, multi-burn-rate alerts. The process
// reads them in gateway/ops/objectives.js, Prometheus through the rules prometheus-rules.js writes.

const { SCHEMA, defaultsOf } = require('./schema');

/** The windows burn rates are read over, in minutes. */
const WINDOWS = Object.freeze({
  '5m': 5, '30m': 30, '1h': 60, '2h': 120, '6h': 360, '1d': 1440, '3d': 4320,
});
/** The alert pairs: [severity, burn rate, long window, short window]; both windows over the rate fire. */
const ALERT_PAIRS = Object.freeze([
  ['page', 14.4, '1h', '5m'], ['page', 6, '6h', '30m'], ['ticket', 3, '1d', '2h'], ['ticket', 1, '3d', '6h'],
]);

/** config.slo ({route: {objective, latencyMs, windowDays}}) as [{name, route, objective, latencyMs, windowDays}], defaults filled, by name. */
function objectivesOf(config) {
  const defaults = defaultsOf(SCHEMA.properties.slo.additionalProperties);
  return Object.entries(config.slo || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([route, s]) => ({
    name: route, route, ...defaults, ...s,
  }));
}

module.exports = { WINDOWS, ALERT_PAIRS, objectivesOf };
