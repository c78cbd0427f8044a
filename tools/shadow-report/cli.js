'use strict';

// ged145 shadow-report: what shadow traffic and canaries came to (docs/safe-change.md), for the
// person who decides whether a candidate may take over. Reads a running gateway's
// /report/shadow.csv (and the last differences of its /status), or a saved copy, and prints per
// subtype and candidate, over the half hours the CSV holds: the queries compared, how many were the
// same, different and failed on the candidate's side (with their shares), failed on the live
// side, dropped over the cap, answered by a canary, and the fields that differed most. Exit 0 when
// something was compared or answered by a canary, 1 when nothing was or the gateway could not be
// reached (one line).

const { UsageError } = require('../../lib/errors');
const { adminBase, readAdmin, readFile } = require('./read');

const TOP_FIELDS = 5;

const summary = 'what shadow traffic and canaries came to per subtype and candidate, from a gateway\'s /report/shadow.csv';
const usage = `usage: ged145 shadow-report [--admin HOST:PORT | --admin URL | --file FILE] [--json]

  --admin ADDR  a running gateway's admin port: HOST:PORT, a PORT on 127.0.0.1, or a URL
                (default 127.0.0.1 and GED145_ADMIN_PORT, else 8080, the gateway's defaults);
                its /report/shadow.csv, and the last differences of its /status
  --file FILE   a saved /report/shadow.csv instead
  --json        the summary as one JSON object

Per subtype and candidate, over the half hours the report holds (the last 48): queries compared
(same, different or failed on the candidate's side), the same, the different and the candidate's
failures with their shares, the live route's failures (nothing to compare with), the queries
dropped over the 32 shadow calls out at a time, the queries a canary's candidate answered, and the
fields that differed most. Exit 1 when nothing was compared and no canary answered, or the gateway
could not be reached.
`;
const options = {
  admin: { type: 'string' },
  file: { type: 'string' },
  json: { type: 'boolean' },
};

/** Text from the gateway or a file, made safe for a terminal: no control characters. */
const safe = (s) => String(s).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');

/** The CSV's rows added up per subtype and candidate, sorted by subtype then candidate. */
function summarise(rows) {
  const by = new Map();
  for (const r of rows) {
    const key = `${r.subtype}\0${r.candidate}`;
    let s = by.get(key);
    if (s === undefined) {
      s = {
        subtype: r.subtype, candidate: r.candidate, compared: 0, same: 0, different: 0, candidateFailed: 0, liveFailed: 0, dropped: 0, canary: 0, fields: {},
      };
      by.set(key, s);
    }
    for (const k of ['same', 'different', 'candidateFailed', 'liveFailed', 'dropped', 'canary']) s[k] += r[k];
    for (const [f, n] of Object.entries(r.fields)) s.fields[f] = (s.fields[f] || 0) + n;
  }
  const out = [...by.values()].sort((a, b) => (a.subtype === b.subtype ? cmp(a.candidate, b.candidate) : cmp(a.subtype, b.subtype)));
  for (const s of out) {
    s.compared = s.same + s.different + s.candidateFailed;
    s.fields = Object.fromEntries(Object.entries(s.fields).sort((a, b) => b[1] - a[1] || cmp(a[0], b[0])));
  }
  return out;
}

const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const share = (n, of) => (of === 0 ? '' : ` (${((100 * n) / of).toFixed(1)} %)`);

/** The half hours a report covers: {count, first, last} by their local start (the gateway's clock). */
function span(rows) {
  const starts = [...new Set(rows.map((r) => r.dateTimeUtc || r.dateTime))].filter(Boolean).sort();
  const local = new Map(rows.map((r) => [r.dateTimeUtc || r.dateTime, r.dateTime || r.dateTimeUtc]));
  return { count: starts.length, first: local.get(starts[0]) || null, last: local.get(starts.at(-1)) || null };
}

/** Columns padded to their widest cell: the first two left-aligned, the counts right-aligned. */
function table(head, lines) {
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd();
  return [line(head), ...lines.map(line)];
}

function describeRows(rows) {
  const out = [];
  const head = ['subtype', 'candidate', 'compared', 'same', 'different', 'candidate failed', 'live failed', 'dropped', 'canary answers'];
  const cells = rows.map((s) => [safe(s.subtype), safe(s.candidate), String(s.compared), String(s.same), `${s.different}${share(s.different, s.compared)}`,
    `${s.candidateFailed}${share(s.candidateFailed, s.compared)}`, String(s.liveFailed), String(s.dropped), String(s.canary)]);
  const lines = table(head, cells);
  out.push(lines[0]);
  rows.forEach((s, i) => {
    out.push(lines[i + 1]);
    const fields = Object.entries(s.fields);
    if (fields.length === 0) return;
    const more = fields.length > TOP_FIELDS ? `, and ${fields.length - TOP_FIELDS} more field(s)` : '';
    out.push(`  most different: ${fields.slice(0, TOP_FIELDS).map(([f, n]) => `${safe(f)} (${n})`).join(', ')}${more}`);
  });
  return out;
}

const value = (v) => (v === null || v === undefined ? '(none)' : `'${safe(v)}'`);

function describeLast(last) {
  const out = [];
  for (const d of last) {
    out.push(`  ${safe(d.at)} ${safe(d.subtype)} -> ${safe(d.candidate)}, InvokeID ${safe(d.invokeId)}`);
    for (const f of d.differences || []) out.push(`    ${safe(f.field)}: live ${value(f.live)}, candidate ${value(f.candidate)}`);
    if (d.more > 0) out.push(`    and ${d.more} more field(s)`);
  }
  return out;
}

async function main(values) {
  if (values.admin !== undefined && values.file !== undefined) throw new UsageError('--admin and --file name two reports: give one');
  const read = values.file !== undefined ? readFile(values.file) : await readAdmin(adminBase(values.admin));
  const rows = summarise(read.rows);
  const halfHours = span(read.rows);
  const anything = rows.some((s) => s.compared > 0 || s.canary > 0);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({
      source: read.where, halfHours, rows, last: read.last === undefined ? null : read.last,
    })}\n`);
  } else if (rows.length === 0) {
    process.stdout.write(`no shadow traffic or canary answers in ${safe(read.where)}: no route has a shadow or canary (routes.<subtype>.shadow, .canary), `
      + 'or none was asked in the last 48 half hours\n');
  } else {
    const when = halfHours.count === 1 ? `1 half hour, starting ${safe(halfHours.first)}`
      : `${halfHours.count} half hours, the first starting ${safe(halfHours.first)}, the last ${safe(halfHours.last)}`;
    const out = [`${safe(read.where)}: ${when} (the gateway's local time)`, '', ...describeRows(rows)];
    if (read.last !== undefined) {
      out.push('');
      if (read.last === null) out.push(`last differences: not shown (${safe(read.lastProblem)})`);
      else if (read.last.length === 0) out.push('last differences: none since the gateway started');
      else out.push('last differences (from /status, newest first; caller data hidden as the gateway\'s log.redact says):', ...describeLast(read.last));
    }
    if (!anything) out.push('', 'nothing compared: every shadowed query was dropped or failed on the live side, and no canary answered');
    process.stdout.write(`${out.join('\n')}\n`);
  }
  if (!anything) process.exitCode = 1;
}

module.exports = {
  summary, usage, options, main,
};
