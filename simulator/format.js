'use strict';

// Console text for a run summary: one aligned block, figures an operator reads at a glance.

/** One number format for every report: grouped thousands ("6,881"), a fixed count of decimals. */
const fixed = (n, digits = 0) => Number(n).toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const num = (n) => (Number.isInteger(n) ? fixed(n) : fixed(n, 2));
/** A setting as given (a budget of 0.001 ms stays 0.001), grouped. */
const given = (n) => Number(n).toLocaleString('en-US', { maximumFractionDigits: 6 });
const ms = (n) => `${n < 10 ? fixed(n, 3) : fixed(n, 1)} ms`;

function kv(obj) {
  const entries = Object.entries(obj).filter(([, v]) => v);
  return entries.length ? entries.map(([k, v]) => `${k} ${num(v)}`).join(', ') : 'none';
}

/** The router's half-hour figures (RouterHalfHours.toJSON): a block of its own, one line per half hour and side. */
function halfHourBlock({ lateTimeoutMs, rows }) {
  if (rows.length === 0) return '';
  const keys = rows.map((r) => `${r.DateTime.slice(11)} ${r.Side}`);
  const w = Math.max(...keys.map((k) => k.length));
  const lines = rows.map((r, i) => {
    const delay = r.AvgDelayToHalf === null ? '' : `; delay avg ${num(r.AvgDelayToHalf)} ms, max ${num(r.MaxDelayToHalf)} ms`;
    return `    ${keys[i].padEnd(w)}  requests ${num(r.RequestsToHalf)}: answered ${num(r.AnsweredToHalf)}, errors ${num(r.ErrorsToHalf)}, `
      + `timeouts ${num(r.TimeoutsToHalf)}; late ${num(r.LatesToHalf)}${delay}`;
  });
  return `  half hours as the router counts them (late: over LateTimeout, ${given(lateTimeoutMs)} ms)\n${lines.join('\n')}\n`;
}

function formatSummary(title, s) {
  const l = s.latencyMs;
  const rows = [
    ['queries sent', num(s.sent) + (s.unsent ? ` (${num(s.unsent)} found no open session)` : '')],
    ['answered', `${num(s.answered)}: ok ${num(s.ok)}; FAILURE_CONF ${kv(s.failures)}`],
    ['late / timeout / lost', `${num(s.late)} / ${num(s.timeout)} / ${num(s.lost)}`],
    ['protocol violations', kv(s.violations)],
    ['heartbeats', `sent ${num(s.heartbeats.sent)}, answered ${num(s.heartbeats.answered)}, missed ${num(s.heartbeats.missed)}`],
    ['throughput', `${num(Math.round(s.txPerSec))} tx/s over ${fixed(s.elapsedMs / 1000, 1)} s`],
    ['latency', `p50 ${ms(l.p50)}  p90 ${ms(l.p90)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)}  max ${ms(l.max)}`],
  ];
  if (s.injected.reject || s.injected.fatal) {
    const behind = s.voided.reject ? ` (+${num(s.voided.reject)} sent behind a fatal frame)` : '';
    const voided = s.voided.queries ? `; ${num(s.voided.queries)} queries sent behind a fatal frame (never read, expected)` : '';
    const rejects = `rejects induced ${num(s.injected.reject)}, caught ${num(s.caught.reject)}${behind}`;
    rows.push(['invalid frames', `${rejects}; fatal induced ${num(s.injected.fatal)}, caught ${num(s.caught.fatal)}${voided}`]);
  }
  if (Object.keys(s.closes).length) rows.push(['connections ended', kv(s.closes)]);
  const w = Math.max(...rows.map((r) => r[0].length));
  return `${title}\n${rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`).join('\n')}\n${s.halfHours ? halfHourBlock(s.halfHours) : ''}`;
}

module.exports = {
  formatSummary, fixed, num, ms, given,
};
