'use strict';

// What every suite shares: a router simulator aimed at the target, a timeline, process
// monitoring, and the shape of a suite's result.

const { Router } = require('../../simulator/router');
const { Timeline, distribution } = require('../timeline');
const { ProcessMonitor } = require('../monitor');
const { num } = require('../../simulator/format');

/** Runs fn(router) with the timeline and the monitor around it; returns the raw material of a report. */
async function measured(ctx, { timelineMs = 1000, ...routerOptions }, fn) {
  const router = new Router({ targets: [ctx.target], seed: ctx.seed, ...routerOptions, settings: { sessionRetryMs: 200, ...(routerOptions.settings || {}) } });
  const monitor = new ProcessMonitor(ctx.monitorTargets, { prefer: ctx.monitorWith }).start();
  await router.start();
  // A short run (the speed suite's few transactions) is charted in tenths of a second, not seconds.
  const timeline = new Timeline(router, { intervalMs: timelineMs }).start();
  const t0 = Date.now();
  let extra;
  try {
    extra = await fn(router);
  } finally {
    timeline.stop();
  }
  const summary = await router.stop();
  const elapsedMs = Date.now() - t0;
  summary.elapsedMs = elapsedMs;
  summary.txPerSec = (summary.answered * 1000) / elapsedMs;
  return {
    summary,
    timeline: timeline.points,
    distribution: distribution(router.stats.histogram),
    monitor: monitor.stop(),
    extra,
  };
}

/** Errors in a run that must have none. */
function errorCount(s) {
  const failures = Object.values(s.failures).reduce((a, b) => a + b, 0);
  const violations = Object.values(s.violations).reduce((a, b) => a + b, 0);
  return failures + s.timeout + s.lost + violations + s.late + s.unsent;
}

function errorsByKind(s) {
  const out = { ...s.failures };
  for (const [k, v] of Object.entries(s.violations)) out[`violation: ${k}`] = v;
  if (s.late) out.late = s.late;
  if (s.timeout) out.timeout = s.timeout;
  if (s.lost) out.lost = s.lost;
  if (s.unsent) out['no open session'] = s.unsent;
  return out;
}

/**
 * A run with induced invalid frames, split into what was expected (induced, caught, voided, and
 * queries not sent while the router reconnected after a fatal frame) and what was not. The error
 * suite's table and the report's chart both read this, so they cannot disagree.
 */
function errorSuiteKinds(s) {
  const expected = {
    'induced reject': s.injected.reject,
    'caught reject': s.caught.reject + s.voided.reject,
    'induced fatal': s.injected.fatal,
    'caught fatal': s.caught.fatal + s.voided.fatal,
    'queries voided': s.voided.queries,
  };
  // A fatal frame closes the connection; queries due before the router has reconnected are not sent.
  if (s.unsent) expected['not sent while reconnecting'] = s.unsent;
  const unexpected = {};
  for (const [k, v] of Object.entries(errorsByKind(s))) {
    if (k === 'E_AG_INVALID_MESSAGE' || k === 'no open session') continue; // the caught rejects and the reconnect gap above
    unexpected[k] = v;
  }
  return { expected, unexpected };
}

/** "E_AG_HOST_ERROR1 1,400, late 22": counts by kind, the largest first, in the reports' one number format. */
const kindsText = (counts) => Object.entries(counts).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${num(v)}`).join(', ');

/** "1,422 errors (E_AG_HOST_ERROR1 1,400, late 22)": a failed verdict names what failed and how often. */
function errorsText(s, what = 'errors') {
  const kinds = kindsText(errorsByKind(s));
  return `${num(errorCount(s))} ${what}${kinds ? ` (${kinds})` : ''}`;
}

/** A progress bar callback (or a no-op): update(fraction 0..1, label). */
function progress(ctx, title) {
  return ctx.progress ? ctx.progress(title) : { update() {}, stop() {} };
}

module.exports = {
  measured, errorCount, errorsByKind, errorSuiteKinds, errorsText, kindsText, progress,
};
