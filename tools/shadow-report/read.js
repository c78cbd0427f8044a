'use strict';

// What `ged145 shadow-report` reads: a gateway's /report/shadow.csv (its admin port, or a saved
// copy), parsed by its header's column names, and the last differences of its /status. The CSV is
// the gateway's (gateway/ops/shadow-report.js writes it): per local half hour, subtype and
// candidate, the shadow results, the canary's answers and the fields that differed.

const http = require('node:http');
const https = require('node:https');
const { UsageError, OperatorError } = require('../../lib/errors');
const { readRegularFile } = require('../../lib/files');

const MAX_BYTES = 64 * 1024 * 1024; // 48 half hours of a few hundred subtypes and their fields fit many times over
const TIMEOUT_MS = 10_000;
const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 8080; // admin.port's default
const CSV_PATH = 'report/shadow.csv';

/** The counts of a row, by the CSV's column names. */
const COUNTS = Object.freeze({
  same: 'Same', different: 'Different', candidateFailed: 'CandidateFailed', liveFailed: 'LiveFailed', dropped: 'Dropped', canary: 'Canary',
});
const REQUIRED = Object.freeze(['Subtype', 'Candidate', ...Object.values(COUNTS)]);

/**
 * The admin port's base URL from --admin: HOST:PORT, a PORT of 127.0.0.1, or an http(s) URL (a
 * reverse proxy's path kept; a pasted .../report/shadow.csv taken back to its base). Without it,
 * 127.0.0.1 and GED145_ADMIN_PORT, else 8080, the gateway's own defaults.
 */
function adminBase(admin, env = process.env) {
  if (admin === undefined) {
    const port = env.GED145_ADMIN_PORT || String(DEFAULT_PORT);
    return adminBase(`${DEFAULT_HOST}:${port}`, {});
  }
  if (admin.includes('://')) {
    let url;
    try {
      url = new URL(admin);
    } catch {
      throw new UsageError(`--admin '${admin}' is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--admin must be an http:// or https:// URL, got ${url.protocol}`);
    url.search = '';
    url.hash = '';
    url.pathname = url.pathname.replace(/\/report\/shadow\.csv$/, '/').replace(/\/?$/, '/');
    return url;
  }
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]/\s]+):)?(\d{1,5})$/.exec(admin);
  if (m === null || Number(m[2]) < 1 || Number(m[2]) > 65535) {
    throw new UsageError(`--admin takes HOST:PORT, a PORT or a URL (the gateway's admin port), got '${admin}'`);
  }
  return new URL(`http://${m[1] || DEFAULT_HOST}:${Number(m[2])}/`);
}

/** The body of GET url as text, at most MAX_BYTES; an OperatorError saying what went wrong. */
function getText(url) {
  const unreachable = (why) => new OperatorError(`cannot reach the gateway's admin port at ${url.origin} (${why}): is the gateway running, `
    + 'and is this its admin.port? (--admin names another, --file reads a saved CSV)');
  return new Promise((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const req = client.get(url, { headers: { accept: 'text/csv, application/json' }, timeout: TIMEOUT_MS }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        const why = res.statusCode === 421 ? ': the gateway does not serve that host name (add it to admin.hosts, or use its IP address)'
          : res.statusCode === 404 ? ': is it a ged145 gateway\'s admin port?' : '';
        reject(new OperatorError(`${url.href} answered HTTP ${res.statusCode}${why}`));
        return;
      }
      const chunks = [];
      let size = 0;
      res.on('data', (chunk) => {
        size += chunk.length;
        chunks.push(chunk);
        if (size > MAX_BYTES) req.destroy(new OperatorError(`${url.href} is over ${MAX_BYTES} bytes; not read`));
      });
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', (err) => {
        reject(err instanceof OperatorError ? err : new OperatorError(`${url.href}: the answer broke off (${err.code || err.message})`));
      });
    });
    req.on('timeout', () => req.destroy(unreachable(`no answer in ${TIMEOUT_MS / 1000} s`)));
    req.on('error', (err) => reject(err instanceof OperatorError ? err : unreachable(err.code || err.message)));
  });
}

/** The records of a CSV text (RFC 4180: quoted fields may hold commas, quotes and line breaks). */
function csvRecords(text) {
  const records = [];
  let record = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false;
  const endField = () => {
    // The gateway quotes a leading = + - @ away from spreadsheets as "'=...": the value is what follows.
    record.push(wasQuoted && /^'[=+\-@]/.test(field) ? field.slice(1) : field);
    field = '';
    wasQuoted = false;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch !== '"') field += ch;
      else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (ch === '"') {
      quoted = true;
      wasQuoted = true;
    } else if (ch === ',') endField();
    else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      endField();
      records.push(record);
      record = [];
    } else field += ch;
  }
  if (field !== '' || record.length > 0) {
    endField();
    records.push(record);
  }
  return records.filter((r) => !(r.length === 1 && r[0] === ''));
}

/** "vars.2=12; ecc.tier=3" -> {"vars.2": 12, "ecc.tier": 3}. */
function fieldCounts(text) {
  const out = {};
  for (const part of (text || '').split('; ')) {
    const eq = part.lastIndexOf('=');
    const n = Number(part.slice(eq + 1));
    if (eq > 0 && Number.isInteger(n)) out[part.slice(0, eq)] = n;
  }
  return out;
}

/**
 * The rows of a shadow CSV: [{dateTime, dateTimeUtc, subtype, candidate, same, different,
 * candidateFailed, liveFailed, dropped, canary, fields}]; an OperatorError naming `where` when it is
 * not one.
 */
function parseShadowCsv(text, where) {
  const [head, ...lines] = csvRecords(text.replace(/^\uFEFF/, ''));
  const missing = head === undefined ? REQUIRED : REQUIRED.filter((c) => !head.includes(c));
  if (missing.length > 0) {
    const halfHour = head !== undefined && head.includes('RequestsToHalf') ? ' (it is the half-hour view: the shadow report is /report/shadow.csv)' : '';
    throw new OperatorError(`${where} is not a shadow report: its header has no ${missing.join(', ')}${halfHour}`);
  }
  const col = (name) => head.indexOf(name);
  return lines.map((cells, i) => {
    const row = {
      dateTime: col('DateTime') === -1 ? null : cells[col('DateTime')],
      dateTimeUtc: col('DateTimeUTC') === -1 ? null : cells[col('DateTimeUTC')],
      subtype: cells[col('Subtype')],
      candidate: cells[col('Candidate')],
      fields: col('DifferentFields') === -1 ? {} : fieldCounts(cells[col('DifferentFields')]),
    };
    for (const [key, name] of Object.entries(COUNTS)) {
      const n = Number(cells[col(name)]);
      if (!/^\d+$/.test(cells[col(name)] || '')) throw new OperatorError(`${where}, line ${i + 2}: ${name} is '${cells[col(name)] ?? ''}', not a count`);
      row[key] = n;
    }
    return row;
  });
}

/** {where, rows} of a saved CSV file. */
function readFile(file) {
  const text = readRegularFile(file, { maxBytes: MAX_BYTES, what: 'shadow report' }).toString('utf8');
  return { where: file, rows: parseShadowCsv(text, file) };
}

/** {where, rows, last} of a running gateway: its CSV, and the last differences of its /status (null, with why, when that could not be read). */
async function readAdmin(base) {
  const csvUrl = new URL(CSV_PATH, base);
  const rows = parseShadowCsv(await getText(csvUrl), csvUrl.href);
  let last = null;
  let lastProblem = null;
  try {
    const status = JSON.parse(await getText(new URL('status', base)));
    if (status && status.shadow && Array.isArray(status.shadow.last)) last = status.shadow.last;
    else lastProblem = '/status has no shadow differences';
  } catch (err) {
    lastProblem = err instanceof OperatorError ? err.message : '/status is not JSON';
  }
  return {
    where: csvUrl.href, rows, last, lastProblem,
  };
}

module.exports = {
  adminBase, readAdmin, readFile, parseShadowCsv, csvRecords,
};
