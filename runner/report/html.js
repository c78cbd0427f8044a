'use strict';

// The HTML report: one self-contained file (Chart.js and the data inlined), which opens offline.
// Per suite: throughput over time, latency percentiles over time, the latency distribution,
// errors by kind, CPU% and RSS over time; the summary table on top.

const fs = require('node:fs');
const path = require('node:path');
const { errorsByKind, errorSuiteKinds } = require('../suites/common');
const { fixed } = require('../../simulator/format');

/** Chart.js's browser bundle, the file its package.json publishes for CDNs (`unpkg`), not a path we guess. */
function chartJsPath() {
  const dir = path.join(path.dirname(require.resolve('chart.js')), '..');
  return path.join(dir, JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).unpkg);
}
const CHART_JS = chartJsPath();
/** What draws the charts in the page (runner/report/page/charts.js, linted as browser code). */
const PAGE_SCRIPT = fs.readFileSync(path.join(__dirname, 'page', 'charts.js'), 'utf8');

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));

/** Only what the charts need, so the page stays small. */
function chartData(r) {
  const procs = (r.monitor && r.monitor.processes) || {};
  return {
    suite: r.suite,
    timeline: r.timeline || [],
    distribution: r.distribution || [],
    errors: r.summary ? errorsOf(r.summary) : {},
    processes: Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, p.samples.map((s) => ({ t: s.t, cpu: s.cpu, rssMb: s.rssKb / 1024 }))])),
    monitorSource: r.monitor ? r.monitor.source : null,
    capacity: r.capacitySteps || null,
    outcomes: r.outcomes || null,
    transactions: r.transactions || null,
  };
}

/** The charts of a suite, in order: [kind, caption]. */
const CHARTS = [
  ['transactions', 'Latency of each transaction (ms), in the order sent'],
  ['throughput', 'Answers per second over time: ok, the backend\'s "no" (app error) and failed, each apart'],
  ['latency', 'Latency percentiles over time (ms)'],
  ['distribution', 'Latency distribution (ms by percentile)'],
  ['errors', 'Errors by kind'],
  ['cpu', 'CPU % over time'],
  ['rss', 'RSS over time (MiB)'],
];

/**
 * Why a chart would be empty, or a single dot, for this suite's data; null when it has a line to
 * show. A chart over time needs two points at least.
 */
function missing(r, kind) {
  const samples = Object.values((r.monitor && r.monitor.processes) || {}).reduce((n, p) => Math.max(n, p.samples.length), 0);
  const points = (r.timeline || []).length;
  const lasted = r.summary && r.summary.elapsedMs !== undefined ? `the run lasted ${fixed(r.summary.elapsedMs / 1000, 2)} s` : 'the run was short';
  switch (kind) {
    case 'transactions': return r.transactions ? null : 'skip';
    case 'throughput':
    case 'latency':
      if (points >= 2) return null;
      if (points === 0) return 'no answer was recorded';
      return `${lasted}, one point of the timeline${r.transactions ? '; the chart of each transaction shows every latency' : ''}`;
    case 'distribution': return (r.distribution || []).length > 0 ? null : 'no latency was recorded';
    case 'errors': return Object.keys(r.summary ? errorsOf(r.summary) : {}).length > 0 ? null : 'none: no error of any kind';
    default:
      if (samples >= 2) return null;
      return `${lasted}, ${samples === 0 ? 'before the first CPU/RSS sample' : 'one CPU/RSS sample'} (one a second): a line needs two`;
  }
}

function figure(r, i, kind, caption) {
  const why = missing(r, kind);
  if (why === 'skip') return '';
  if (why !== null) return `<figure><figcaption>${esc(caption)}</figcaption><p class="empty" data-empty="${kind}">No chart: ${esc(why)}.</p></figure>`;
  return `<figure><figcaption>${esc(caption)}</figcaption>
      <div class="chart"><canvas data-chart="${kind}" data-suite="${i}"></canvas></div></figure>`;
}

/** A multi-step suite's time charts show its last step: their captions say which. */
function stepOf(r) {
  return r.capacitySteps && r.capacitySteps.length > 0 ? ` (last step only: ${r.capacitySteps.at(-1).rate}/s)` : '';
}

/** Rows named expected:/unexpected: are coloured as such; an unexpected count above zero stands out. */
function rowClass(key, value) {
  if (key.startsWith('expected:')) return 'expected';
  if (key.startsWith('unexpected:')) return String(value) === '0' ? 'unexpected-none' : 'unexpected';
  return '';
}

/**
 * errorsByKind; for a run with induced invalid frames, split into what was expected (induced,
 * caught, voided: drawn blue) and what was not (drawn red), so a passing error run looks it.
 */
function errorsOf(s) {
  if (!(s.injected && (s.injected.reject || s.injected.fatal))) return errorsByKind(s);
  const { expected, unexpected } = errorSuiteKinds(s);
  const out = {};
  for (const [k, v] of Object.entries(expected)) out[`expected: ${k}`] = v;
  for (const [k, v] of Object.entries(unexpected)) out[`unexpected: ${k}`] = v;
  return out;
}

function htmlReport(results, { title = 'ged145 test run', meta = {} } = {}) {
  const chartJs = fs.readFileSync(CHART_JS, 'utf8').replace(/\/\/# sourceMappingURL=.*$/m, '');
  const data = JSON.stringify(results.map(chartData)).replace(/</g, '\\u003c');
  const verdict = (r) => (r.verdict.pass ? 'PASS' : `FAIL: ${esc(r.verdict.reasons.join('; '))}`);
  const summaryRows = results
    .map((r) => `<tr class="${r.verdict.pass ? 'pass' : 'fail'}"><td>${esc(r.suite)}</td><td>${verdict(r)}</td><td>${esc(r.title)}</td></tr>`)
    .join('\n');
  const capacityFigure = (r, i) => (r.capacitySteps
    ? `<figure class="wide"><figcaption>Offered rate against p99 latency and the share answered ok, one point per step</figcaption>
    <div class="chart"><canvas data-chart="capacity" data-suite="${i}"></canvas></div></figure>`
    : '');
  const outcomesFigure = (r, i) => (r.outcomes
    ? `<figure class="wide"><figcaption>Answers per second by outcome (the shaded spans are the fault windows)</figcaption>
    <div class="chart"><canvas data-chart="outcomes" data-suite="${i}"></canvas></div></figure>`
    : '');
  const sections = results.map((r, i) => `
<section>
  <h2>${esc(r.title)}</h2>
  <table class="figures">${(r.rows || []).map(([k, v]) => `<tr class="${rowClass(k, v)}"><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('')}</table>
  <div class="grid">
    ${capacityFigure(r, i)}
    ${outcomesFigure(r, i)}
    ${CHARTS.map(([kind, caption]) => figure(r, i, kind, caption + stepOf(r))).join('\n    ')}
  </div>
</section>`).join('\n');
  const metaRows = Object.entries(meta).map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;text-align:left;vertical-align:top}
table.summary td,
table.summary th{border:1px solid #ddd}tr.pass td:nth-child(2){color:#17803d;font-weight:600}tr.fail td:nth-child(2){color:#b42318;font-weight:600}
table.figures th{font-weight:600;color:#555}tr.expected th{color:#2563eb}tr.unexpected th,tr.unexpected td{color:#b42318;font-weight:600}
tr.unexpected-none th{color:#17803d}p.empty{color:#777;margin:24px 8px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:16px}
figure{margin:0;border:1px solid #eee;padding:8px}figure.wide{grid-column:1/-1}figcaption{font-weight:600;margin-bottom:4px}
.chart{position:relative;height:240px}figure.wide .chart{height:300px}
</style></head>
<body>
<h1>${esc(title)}</h1>
<table class="meta">${metaRows}</table>
<table class="summary"><tr><th>suite</th><th>verdict</th><th>what ran</th></tr>
${summaryRows}
</table>
${sections}
<script>${chartJs}</script>
<script type="application/json" id="report-data">${data}</script>
<script>${PAGE_SCRIPT}</script>
</body></html>
`;
}

module.exports = { htmlReport };
