'use strict';

// What shadow traffic and canaries came to, for the people who decide whether a candidate may take
// over (docs/safe-change.md): per local half hour (the router's, half-hour.js), subtype and
// candidate, how many shadowed queries were the same, different (and which fields), failed on
// the candidate's side or on the live side, or were dropped over the cap, and how many queries a
// canary answered; and the last differences, field by field, for the status page, caller data
// hidden under log.redact. Fed by the backend's channels (ged145:shadow:result,
// ged145:canary:answer); /status, /report/shadow.csv and `ged145 shadow-report` read it.

const { channels } = require('../backend/diagnostics');
const { hideCallerData } = require('../../lib/redact');
const { text: { printable } } = require('../../lib/protocol');
const { halfHourStart, csvField } = require('./half-hour');

const RESULTS = Object.freeze(['same', 'different', 'candidate_failed', 'live_failed', 'dropped']);
const KEEP = 48; // half hours: a day
const LAST = 20; // differences shown
const FIELDS_SHOWN = 10; // per difference
const MAX_VALUE = 80;
const MAX_FIELDS = 200; // distinct fields counted per cell: an answer's ECC names are the backend's, unbounded

/** A value as the status page shows it: printable, cut, caller data hidden under log.redact. */
function shown(value, query, redact) {
  if (value === null) return null;
  const s = printable(String(value)).slice(0, MAX_VALUE);
  return redact ? hideCallerData(s, query) : s;
}

const localTime = (t) => {
  const d = new Date(t);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
};

class ShadowReport {
  /** now: the wall clock. */
  constructor({ now = Date.now } = {}) {
    this.now = now;
    this.periods = new Map(); // half-hour start -> Map(subtype\0candidate -> cell)
    this.last = []; // the newest differences first
    this.canaryQueries = new WeakSet(); // the queries a canary's candidate answered (their QUERY_REQ)
    this.gateway = null;
    this.onResult = (m) => {
      if (m.gateway === this.gateway) this.result(m);
    };
    this.onCanary = (m) => {
      if (m.gateway !== this.gateway) return;
      this.canaryQueries.add(m.query);
      this.cell(m.subtype, m.candidate).canary++;
    };
  }

  attach(gateway) {
    this.gateway = gateway;
    channels.shadowResult.subscribe(this.onResult);
    channels.canaryAnswer.subscribe(this.onCanary);
    return this;
  }

  detach() {
    channels.shadowResult.unsubscribe(this.onResult);
    channels.canaryAnswer.unsubscribe(this.onCanary);
    this.gateway = null;
  }

  /** Whether a canary's candidate answered this query (its QUERY_REQ, a query view's `fields`). */
  isCanary(query) {
    return this.canaryQueries.has(query);
  }

  cell(subtype, candidate) {
    const start = halfHourStart(this.now());
    let rows = this.periods.get(start);
    if (rows === undefined) {
      rows = new Map();
      this.periods.set(start, rows);
      if (this.periods.size > KEEP) this.periods.delete(this.periods.keys().next().value);
    }
    const key = `${subtype}\0${candidate}`;
    let c = rows.get(key);
    if (c === undefined) {
      c = { subtype: printable(String(subtype)), candidate, canary: 0, fields: {} };
      for (const r of RESULTS) c[r] = 0;
      rows.set(key, c);
    }
    return c;
  }

  result({
    query, subtype, candidate, result, differences,
  }) {
    const c = this.cell(subtype, candidate);
    c[result]++;
    if (differences.length === 0) return;
    for (const { field } of differences) {
      if (Object.hasOwn(c.fields, field) || Object.keys(c.fields).length < MAX_FIELDS) c.fields[field] = (c.fields[field] || 0) + 1;
    }
    const redact = this.gateway.config.log.redact;
    this.last.unshift({
      at: new Date(this.now()).toISOString(),
      subtype: c.subtype,
      candidate,
      invokeId: query.invokeId,
      differences: differences.slice(0, FIELDS_SHOWN).map((d) => ({
        field: printable(d.field), live: shown(d.live, query, redact), candidate: shown(d.candidate, query, redact),
      })),
      more: Math.max(0, differences.length - FIELDS_SHOWN),
    });
    if (this.last.length > LAST) this.last.pop();
  }

  /** {periods: [{start, local, rows}], last}: oldest half hour first. */
  toJSON() {
    return {
      periods: [...this.periods].map(([start, rows]) => ({
        start: new Date(start).toISOString(), startMs: start, local: localTime(start), rows: [...rows.values()].map((r) => ({ ...r, fields: { ...r.fields } })),
      })),
      last: this.last,
    };
  }
}

/** Several processes' views as one: cells of the same half hour, subtype and candidate added; the newest differences. */
function mergeShadow(list) {
  const byStart = new Map();
  for (const view of list.filter(Boolean)) {
    for (const p of view.periods) {
      if (!byStart.has(p.startMs)) byStart.set(p.startMs, { ...p, rows: new Map() });
      const rows = byStart.get(p.startMs).rows;
      for (const r of p.rows) {
        const key = `${r.subtype}\0${r.candidate}`;
        const into = rows.get(key);
        if (into === undefined) rows.set(key, { ...r, fields: { ...r.fields } });
        else {
          for (const k of [...RESULTS, 'canary']) into[k] += r[k];
          for (const [f, n] of Object.entries(r.fields)) into.fields[f] = (into.fields[f] || 0) + n;
        }
      }
    }
  }
  const periods = [...byStart.values()].sort((a, b) => a.startMs - b.startMs).slice(-KEEP).map((p) => ({ ...p, rows: [...p.rows.values()] }));
  const last = list.filter(Boolean).flatMap((v) => v.last).sort((a, b) => (a.at < b.at ? 1 : -1)).slice(0, LAST);
  return { periods, last };
}

const CSV_COLUMNS = Object.freeze(['DateTime', 'Subtype', 'Candidate', 'Same', 'Different', 'CandidateFailed', 'LiveFailed', 'Dropped', 'Canary',
  'DifferentFields', 'DateTimeUTC']);

/** The view as CSV, one line per half hour, subtype and candidate, oldest first; DifferentFields: "field=count; ...", most first. */
function shadowCsv(view) {
  const lines = [CSV_COLUMNS.join(',')];
  for (const p of view.periods) {
    for (const r of p.rows) {
      const fields = Object.entries(r.fields).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([f, n]) => `${f}=${n}`).join('; ');
      lines.push([p.local, r.subtype, r.candidate, r.same, r.different, r.candidate_failed, r.live_failed, r.dropped, r.canary, fields, p.start]
        .map(csvField).join(','));
    }
  }
  return `${lines.join('\r\n')}\r\n`;
}

module.exports = {
  ShadowReport, mergeShadow, shadowCsv, CSV_COLUMNS,
};
