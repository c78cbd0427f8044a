'use strict';

// The report of a run, in three forms: index.json (every case, for programs), junit.xml (for CI
// systems: a testcase per case, a MUST failure as <failure>, a non-strict one as a failure only
// with --strict) and index.html (for people: the score, then each failed case with what was
// expected, what was observed and the frames exchanged, decoded by the project's decoder).

const fs = require('node:fs');
const path = require('node:path');

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The JSON of a run: what index.json holds and --json prints. */
function toJson(run) {
  return {
    target: run.target,
    date: run.date,
    strict: run.strict,
    summary: run.counts,
    exitCode: run.exitCode,
    cases: run.results.map((r) => ({
      id: r.id,
      level: r.level,
      title: r.title,
      requirement: r.requirement,
      section: r.section,
      result: r.result,
      expected: r.expected,
      observed: r.observed,
      durationMs: r.durationMs,
      ...(r.measured ? { measured: r.measured } : {}),
      ...(r.frames ? { frames: r.frames } : {}),
    })),
  };
}

function junit(run) {
  const failing = (r) => r.result === 'fail' || (r.result === 'non-strict' && run.strict);
  const cases = run.results.map((r) => {
    const classname = r.id.split('/').slice(0, 2).join('.');
    const open = `    <testcase classname="${esc(classname)}" name="${esc(`${r.id} [${r.level}] ${r.title}`)}" time="${(r.durationMs / 1000).toFixed(3)}"`;
    if (r.result === 'skipped') return `${open}>\n      <skipped message="${esc(r.observed)}"/>\n    </testcase>`;
    if (failing(r)) {
      const text = `requirement: ${r.requirement}\nexpected: ${r.expected}\nobserved: ${r.observed}`;
      return `${open}>\n      <failure message="${esc(r.observed)}" type="${r.level}">${esc(text)}</failure>\n    </testcase>`;
    }
    return `${open}>\n      <system-out>${esc(`${r.result}: ${r.observed}`)}</system-out>\n    </testcase>`;
  });
  const { counts } = run;
  const total = run.results.length;
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="ged145 conformance" tests="${total}" failures="${counts.failed}" skipped="${counts.skipped}">
  <testsuite name="ged145 conformance ${esc(run.target)}" tests="${total}" failures="${counts.failed}" skipped="${counts.skipped}" timestamp="${esc(run.date)}">
${cases.join('\n')}
  </testsuite>
</testsuites>
`;
}

/** "MUST 30/31" per level: passed of those that ran. */
function byLevel(results) {
  return ['MUST', 'SHOULD', 'INFO'].map((level) => {
    const ran = results.filter((r) => r.level === level && r.result !== 'skipped');
    const ok = ran.filter((r) => r.result === 'pass' || r.result === 'info').length;
    return { level, ok, ran: ran.length };
  });
}

const frameRow = (f) => `        <tr class="${f.dir === 'router->host' ? 'out' : 'in'}"><td>${f.at}</td><td>${esc(f.dir)}</td>`
  + `<td><code>${esc(f.text)}</code></td></tr>`;

function failedSection(r) {
  const frames = (r.frames || []).map((c) => `
      <h4>${esc(c.connection)}</h4>
      <table class="frames"><tr><th>ms</th><th>direction</th><th>frame</th></tr>
${c.frames.map(frameRow).join('\n')}
      </table>${c.more > 0 ? `<p class="more">and ${c.more} more frames</p>` : ''}`).join('');
  return `
    <section class="case-detail ${r.result}" id="${esc(r.id)}">
      <h3><span class="badge ${r.result}">${esc(r.result)}</span> ${esc(r.id)} <span class="level">${r.level}</span> ${esc(r.title)}</h3>
      <blockquote>docs/protocol.md section ${esc(r.section)}: ${esc(r.requirement)}</blockquote>
      <dl><dt>expected</dt><dd class="expected">${esc(r.expected)}</dd><dt>observed</dt><dd class="observed">${esc(r.observed)}</dd></dl>${frames}
    </section>`;
}

function html(run) {
  const { counts } = run;
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
.badge.info{background:#1565c0}.badge.skipped{background:#9e9e9e}
blockquote{border-left:3px solid #ccc;margin:.5em 0;padding-left:1em;color:#555}dt{font-weight:bold}dd{margin:0 0 .5em 1em}
table.frames code{white-space:pre-wrap;word-break:break-all}tr.out td{background:#f5f9ff}tr.in td{background:#fffaf3}.level{font-size:.8em;color:#555}
</style></head>
<body>
  <h1>GED-145 conformance of ${esc(run.target)}</h1>
  <p class="meta">${esc(run.date)}${run.strict ? ' · --strict' : ''}</p>
  <p class="score">${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped</p>
  <ul class="levels">${levels}</ul>
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
  writeReport, toJson, junit, html,
};
