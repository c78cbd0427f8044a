'use strict';

// The report of a run, in three forms: index.json (every case, for programs), junit.xml (for CI
// systems: a testcase per case, a MUST failure as <failure> carrying the same lines as the
// console and the exchange in hex, with the level, source and cause as properties; a non-strict
// one as a failure only with --strict) and index.html (for people: the score, the failures by
// cause, then each failed case with its rule and source, expected and actual, and the exchange
// around the failure: TCP writes and reads in hex, each frame decoded, the offending ones marked).

const fs = require('node:fs');
const path = require('node:path');
const { exchangeLines } = require('./verdict');

/** The lines of a failure, shared by the console and JUnit. */
function failureLines(r) {
  return [
    `requirement: "${r.requirement}" (docs/protocol.md section ${r.section})`,
    `     source: ${r.source}`,
    `   expected: ${r.expected}`,
    `     actual: ${r.observed}`,
    ...(r.also || []).map((a) => `       also: ${a}`),
    `      cause: ${r.cause}`,
    ...exchangeLines(r.exchange),
  ];
}

/** The summary line, always last (CI reads it): "N passed, N failed, N skipped", and ", N not run" when the host went away. */
function summaryLine({ counts }) {
  return `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped${counts.notRun > 0 ? `, ${counts.notRun} not run` : ''}`;
}

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The JSON of a run: what index.json holds and --json prints. */
function toJson(run) {
  return {
    target: run.target,
    date: run.date,
    strict: run.strict,
    summary: run.counts,
    causes: run.causes,
    ...(run.hostGone ? { hostGone: run.hostGone } : {}),
    exitCode: run.exitCode,
    cases: run.results.map((r) => ({
      id: r.id,
      level: r.level,
      title: r.title,
      requirement: r.requirement,
      section: r.section,
      source: r.source,
      result: r.result,
      expected: r.expected,
      observed: r.observed,
      ...(r.cause ? { cause: r.cause } : {}),
      ...(r.also ? { also: r.also } : {}),
      durationMs: r.durationMs,
      ...(r.measured ? { measured: r.measured } : {}),
      ...(r.exchange ? { exchange: r.exchange } : {}),
    })),
  };
}

function junit(run) {
  const failing = (r) => r.result === 'fail' || (r.result === 'non-strict' && run.strict);
  const cases = run.results.map((r) => {
    const classname = r.id.split('/').slice(0, 2).join('.');
    const open = `    <testcase classname="${esc(classname)}" name="${esc(`${r.id} [${r.level}] ${r.title}`)}" time="${(r.durationMs / 1000).toFixed(3)}"`;
    const props = `      <properties>\n${[['level', r.level], ['source', r.source], ...(r.cause ? [['cause', r.cause]] : [])]
      .map(([n, v]) => `        <property name="${n}" value="${esc(v)}"/>`).join('\n')}\n      </properties>\n`;
    if (r.result === 'skipped' || r.result === 'not-run') return `${open}>\n${props}      <skipped message="${esc(r.observed)}"/>\n    </testcase>`;
    if (failing(r)) {
      return `${open}>\n${props}      <failure message="${esc(r.observed)}" type="${r.level}">${esc(failureLines(r).join('\n'))}</failure>\n    </testcase>`;
    }
    return `${open}>\n${props}      <system-out>${esc(`${r.result}: ${r.observed}`)}</system-out>\n    </testcase>`;
  });
  const { counts } = run;
  const total = run.results.length;
  const skipped = counts.skipped + counts.notRun;
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="ged145 conformance" tests="${total}" failures="${counts.failed}" skipped="${skipped}">
  <testsuite name="ged145 conformance ${esc(run.target)}" tests="${total}" failures="${counts.failed}" skipped="${skipped}" timestamp="${esc(run.date)}">
${cases.join('\n')}
  </testsuite>
</testsuites>
`;
}

/** "MUST 30/31" per level: passed of those that ran. */
function byLevel(results) {
  return ['MUST', 'SHOULD', 'INFO'].map((level) => {
    const ran = results.filter((r) => r.level === level && r.result !== 'skipped' && r.result !== 'not-run');
    const ok = ran.filter((r) => r.result === 'pass' || r.result === 'info').length;
    return { level, ok, ran: ran.length };
  });
}

function exchangeRow(f) {
  if (f.skipped !== undefined) return `        <tr class="gap"><td colspan="5">... ${f.skipped} rows ${f.unrecorded ? 'not recorded' : 'not shown'}</td></tr>`;
  const where = `${f.dir === 'router->host' ? 'write' : 'read'} ${f.write}${f.part === 'whole' ? '' : ` (${f.part})`}`;
  return `        <tr class="${f.dir === 'router->host' ? 'out' : 'in'}${f.marked ? ' marked' : ''}"><td>${f.at}</td><td>${esc(f.dir)}</td>`
    + `<td>${esc(where)}</td><td><code class="hex">${esc(f.hex)}</code></td><td><code>${esc(f.frame || '')}</code></td></tr>`;
}

function failedSection(r) {
  const exchange = (r.exchange || []).map((c) => `
      <h4>${esc(c.connection)}</h4>
      <table class="frames"><tr><th>ms</th><th>direction</th><th>TCP</th><th>bytes</th><th>frame</th></tr>
${c.rows.map(exchangeRow).join('\n')}
      </table>`).join('');
  const also = (r.also || []).map((a) => `<dt>also</dt><dd class="also">${esc(a)}</dd>`).join('');
  return `
    <section class="case-detail ${r.result}" id="${esc(r.id)}">
      <h3><span class="badge ${r.result}">${esc(r.result)}</span> ${esc(r.id)} <span class="level">${r.level}</span> ${esc(r.title)}</h3>
      <blockquote>docs/protocol.md section ${esc(r.section)}: ${esc(r.requirement)}<br><cite class="source">${esc(r.source)}</cite></blockquote>
      <dl><dt>expected</dt><dd class="expected">${esc(r.expected)}</dd><dt>actual</dt><dd class="observed">${esc(r.observed)}</dd>${also}`
    + `<dt>cause</dt><dd class="cause">${esc(r.cause)}</dd></dl>${exchange}
    </section>`;
}

function causesSection(run) {
  if (!run.causes || run.causes.length === 0) return '';
  const links = (ids) => ids.map((id) => `<a href="#${esc(id)}">${esc(id)}</a>`).join(', ');
  return `<h2>Failures by cause</h2>
  <ul class="causes">${run.causes.map((c) => `<li><b>${esc(c.cause)}</b> (${c.ids.length}): ${links(c.ids)}</li>`).join('')}</ul>`;
}

function html(run) {
  const failed = run.results.filter((r) => r.result === 'fail' || r.result === 'non-strict');
  const levels = byLevel(run.results).map((l) => `<li><b>${l.level}</b> ${l.ok}/${l.ran}</li>`).join('');
  const rows = run.results.map((r) => `      <tr class="${r.result}"><td><span class="badge ${r.result}">${esc(r.result)}</span></td>`
    + `<td>${r.result === 'fail' || r.result === 'non-strict' ? `<a href="#${esc(r.id)}">${esc(r.id)}</a>` : esc(r.id)}</td><td>${r.level}</td>`
    + `<td>${esc(r.title)}</td><td>${esc(r.observed)}</td><td>${r.durationMs}</td></tr>`).join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GED-145 conformance: ${esc(run.target)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
.score{font-size:2em;margin:.2em 0}.levels{list-style:none;padding:0;display:flex;gap:2em}
table{border-collapse:collapse;width:100%;margin:.5em 0}td,th{border-bottom:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
.badge{display:inline-block;padding:0 6px;border-radius:3px;font-size:.85em;color:#fff;background:#888}
.badge.pass{background:#2e7d32}.badge.fail{background:#c62828}.badge.non-strict{background:#ef6c00}
.badge.info{background:#1565c0}.badge.skipped,.badge.not-run{background:#9e9e9e}
tr.marked td{background:#ffe0e0;font-weight:bold}code.hex{font-size:.85em;color:#444}tr.gap td{color:#777;font-style:italic}
blockquote{border-left:3px solid #ccc;margin:.5em 0;padding-left:1em;color:#555}dt{font-weight:bold}dd{margin:0 0 .5em 1em}
table.frames code{white-space:pre-wrap;word-break:break-all}tr.out td{background:#f5f9ff}tr.in td{background:#fffaf3}.level{font-size:.8em;color:#555}
</style></head>
<body>
  <h1>GED-145 conformance of ${esc(run.target)}</h1>
  <p class="meta">${esc(run.date)}${run.strict ? ' · --strict' : ''}</p>
  <p class="score">${esc(summaryLine(run))}</p>
  <ul class="levels">${levels}</ul>
  ${causesSection(run)}
  <h2>Failed cases</h2>
  ${failed.length === 0 ? '<p class="none">None.</p>' : failed.map(failedSection).join('\n')}
  <h2>Every case</h2>
  <table class="cases"><tr><th>result</th><th>id</th><th>level</th><th>case</th><th>observed</th><th>ms</th></tr>
${rows}
  </table>
</body></html>
`;
}

/** Writes index.json, junit.xml and index.html into dir (made if missing); returns their paths. */
function writeReport(dir, run) {
  fs.mkdirSync(dir, { recursive: true });
  const files = {
    json: path.join(dir, 'index.json'), junit: path.join(dir, 'junit.xml'), html: path.join(dir, 'index.html'),
  };
  fs.writeFileSync(files.json, `${JSON.stringify(toJson(run), null, 2)}\n`);
  fs.writeFileSync(files.junit, junit(run));
  fs.writeFileSync(files.html, html(run));
  return files;
}

module.exports = {
  writeReport, toJson, junit, html, failureLines, summaryLine,
};
