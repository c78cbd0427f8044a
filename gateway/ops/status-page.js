'use strict';

// The admin port's status page (GET /): one self-contained HTML document. Its script
// (page/status.js, linted as browser code) asks /status once a second and redraws; nothing is
// fetched from anywhere else (the admin app sends a Content-Security-Policy that forbids it).

const fs = require('node:fs');
const path = require('node:path');

const { SESSION_STATE } = require('../session/states');
const { FAILED_LABELS, LABEL } = require('../backend/outcome');

// The session states and the failed outcome labels the page reads are the core's own
// (session/states.js, backend/outcome.js), given to the script, not retyped in it.
const SCRIPT = fs.readFileSync(path.join(__dirname, 'page', 'status.js'), 'utf8')
  .replace("'use strict';\n", `'use strict';\n\nconst SESSION_STATE = ${JSON.stringify(SESSION_STATE)};\n`
    + `const FAILED_LABELS = ${JSON.stringify(FAILED_LABELS)};\nconst APP_ERROR = ${JSON.stringify(LABEL.APP_ERROR)};\n`);

const STYLE = `
:root{--ok:#15803d;--warn:#b45309;--bad:#b91c1c;--chosen:#4f46e5;--mute:#6b7280;--line:#e5e7eb}
*{box-sizing:border-box}body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#111;background:#f9fafb}
header{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:baseline;padding:12px 20px;background:#111827;color:#f9fafb}
header h1{font-size:18px;margin:0}header span{color:#d1d5db}#updated.stale{color:#fca5a5}
main{padding:16px 20px;display:grid;gap:16px;grid-template-columns:repeat(auto-fit,minmax(min(100%,560px),1fr))}
section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px 14px;min-width:0}
section.wide{grid-column:1/-1}h2{font-size:15px;margin:0 0 8px}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(130px,1fr));gap:10px}
.tile{border:1px solid var(--line);border-radius:6px;padding:8px 10px}.tile b{display:block;font-size:22px}
.tile small{color:var(--mute)}
.chart{height:170px;position:relative}.chart svg{width:100%;height:100%;display:block}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--mute);min-height:18px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.scroll{height:190px;overflow:auto;border-top:1px solid var(--line)}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);white-space:nowrap}
th{position:sticky;top:0;background:#fff;color:var(--mute);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:var(--ok)}.warn{color:var(--warn)}.bad{color:var(--bad)}.chosen{color:var(--chosen)}.mute{color:var(--mute)}
li{margin:2px 0}ul{margin:0;padding-left:18px}
@media (min-width:1800px){body{font-size:16px}.chart{height:220px}}
`;

function statusPage() {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>ged145 gateway status</title><link rel="icon" href="data:,"><style>${STYLE}</style></head>
<body>
<header><h1>ged145 gateway</h1><span id="summary">connecting...</span><span id="updated"></span></header>
<main>
  <section class="wide"><div class="tiles" id="tiles"></div></section>
  <section><h2>Queries per second by outcome (last 5 minutes)</h2><div class="chart" id="rate-chart"></div><div class="legend" id="rate-legend"></div></section>
  <section><h2>Latency per second, p50 and p99 (ms)</h2><div class="chart" id="latency-chart"></div><div class="legend" id="latency-legend"></div></section>
  <section class="wide"><h2>Router sessions</h2><div class="scroll"><table id="sessions"></table></div><div id="refused" class="mute"></div></section>
  <section><h2>Backend</h2><div id="backend"></div><div id="auth"></div><div class="scroll"><table id="circuits"></table></div></section>
  <section><h2>Outcomes and subtypes (last 5 minutes)</h2><div class="scroll"><table id="outcomes"></table></div></section>
  <section><h2>Processes</h2><div class="scroll"><table id="processes"></table></div><div id="config" class="mute"></div></section>
  <section><h2>Recent warnings and errors</h2><div class="scroll"><ul id="warnings"></ul></div></section>
  <section><h2>Connections refused or failed before a session</h2><div class="scroll"><ul id="connection-warnings"></ul></div></section>
  <section class="wide"><h2>Shadow traffic and canaries (this half hour)</h2><div class="scroll"><table id="shadow"></table></div><div id="canaries"></div>
    <div class="scroll"><table id="shadow-last"></table></div></section>
  <section class="wide"><h2>Objectives per route</h2><div class="scroll"><table id="objectives"></table></div></section>
  <section class="wide"><h2>Half hours as the router counts them (Application_Gateway_Half_Hour)</h2><div class="scroll"><table id="half-hours"></table></div>
    <div class="mute">per side, subtypes added; canary: the queries a canary's candidate answered, in the router's counts too;
      by subtype: <a href="/report/half-hour.csv">half-hour.csv</a></div></section>
</main>
<script>${SCRIPT}</script>
</body></html>
`;
}

module.exports = { statusPage };
