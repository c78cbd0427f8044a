'use strict';

// The router's half-hour view of this gateway (docs/reports.md): per clock half hour, per router
// side and per subtype, what the ICM router keeps for an application gateway in its
// Application_Gateway_Half_Hour table: requests, replies (QUERY_RESP answered, FAILURE_CONF
// errors), the average and the longest delay, replies later than lateTimeoutMs (the router's
// LateTimeout), and refusals (connections or sessions refused). Beside the router's figures, the
// queries of those that a canary's candidate answered (docs/safe-change.md), and its errors: they
// are in the router's counts too, since the router cannot tell them apart.
//
// Boundaries are the router's: half hours of the local clock (:00 and :30 local time), so in a
// zone whose offset ends in :45 (Asia/Kathmandu, Pacific/Chatham) they fall at :15 and :45 UTC,
// and a half hour around a daylight-saving change is as long as the local clock makes it. The
// process's zone (TZ) should be the central controller's.
//
// A query costs a comparison with the end of the current half hour, two Map lookups and a few
// additions on a cell made once per half hour, subtype and side. Cells hold sums and maxima, never
// averages, so that a cluster primary adds its workers' cells (mergeHalfHours) before anyone
// divides.

const { text: { printable } } = require('../../lib/protocol');
const { LABEL } = require('../backend/outcome');

const HALF_HOUR_MS = 30 * 60_000;
const KEEP = 48;
const OTHER = '(other)';
const NO_SIDE = ''; // a session that has not said its side (before OPEN_REQ)
const NO_QUERY = ''; // the subtype of a refusal: no query was read
const MAX_LABEL = 64;

/**
 * The start (epoch ms) of the local half hour that holds t: :00 or :30 on the local clock, read
 * with the UTC offset in force at t (so that an hour lived twice when the clock goes back is two
 * half hours twice, not one).
 */
function halfHourStart(t) {
  const offsetMs = -new Date(t).getTimezoneOffset() * 60_000;
  const local = t + offsetMs;
  return local - (((local % HALF_HOUR_MS) + HALF_HOUR_MS) % HALF_HOUR_MS) - offsetMs;
}

/** The start of the half hour after the one starting at start (a daylight-saving change can make it longer or shorter). */
function nextHalfHour(start) {
  let next = halfHourStart(start + HALF_HOUR_MS);
  // A clock set back by 30 minutes (Australia/Lord_Howe) repeats the same local half hour.
  if (next <= start) next = halfHourStart(start + 2 * HALF_HOUR_MS);
  return next;
}

class Cell {
  constructor() {
    this.requests = 0; // QUERY_REQs read (each got a reply, or its router went away first)
    this.answered = 0; // QUERY_RESP written
    this.errors = 0; // FAILURE_CONF written
    this.lates = 0; // replies written more than lateTimeoutMs after the query was read
    this.delaySumMs = 0; // over the replies written
    this.maxDelayMs = 0;
    this.refusals = 0; // connections or sessions refused
    this.canary = 0; // of requests, those a canary sent to its candidate
    this.canaryErrors = 0; // of those, FAILURE_CONF written (in errors too)
  }
}

class Period {
  constructor(start, end) {
    this.start = start;
    this.end = end;
    this.sides = new Map(); // side (router text) -> Map(subtype (router text) -> Cell)
  }
}

class HalfHours {
  /**
   * lateTimeoutMs: a reply later than this counts in `lates` (the router's LateTimeout);
   * maxSubtypes, maxSides: subtypes and sides with rows of their own per half hour, the rest are
   * "(other)" (a router can send any text); keep: half hours kept, the current one included; now:
   * the clock.
   */
  constructor({
    lateTimeoutMs = 100, maxSubtypes = 100, maxSides = 16, keep = KEEP, now = Date.now,
  } = {}) {
    this.lateTimeoutMs = lateTimeoutMs;
    this.maxSubtypes = maxSubtypes;
    this.maxSides = maxSides;
    this.keep = keep;
    this.now = now;
    this.past = []; // the half hours before the current one, oldest first
    const t = now();
    this.current = new Period(halfHourStart(t), nextHalfHour(halfHourStart(t)));
  }

  /** Settings that a reload may change; the figures stay. */
  configure({ lateTimeoutMs, maxSubtypes }) {
    if (lateTimeoutMs !== undefined) this.lateTimeoutMs = lateTimeoutMs;
    if (maxSubtypes !== undefined) this.maxSubtypes = maxSubtypes;
  }

  /** The cell of a subtype and side in the current half hour (side null: not known); t: now. */
  cell(subtype, side, t = this.now()) {
    if (t >= this.current.end) this.roll(t);
    const { sides } = this.current;
    const sideKey = side === null || side === undefined ? NO_SIDE : side;
    let rows = sides.get(sideKey);
    if (rows === undefined) rows = bounded(sides, sideKey, this.maxSides, () => new Map());
    const c = rows.get(subtype);
    return c === undefined ? bounded(rows, subtype, subtype === NO_QUERY ? Infinity : this.maxSubtypes, () => new Cell()) : c;
  }

  /**
   * Hot path: a query settled. outcome: its label (lost_router_gone and aborted: no reply was
   * written); failure: a FAILURE_CONF was written (its status is not null); ms: read to written;
   * t: now, when the caller has read the clock already; canary: a canary's candidate answered it.
   */
  query(side, subtype, outcome, failure, ms, t = this.now(), canary = false) {
    const c = this.cell(subtype === undefined ? NO_QUERY : subtype, side, t);
    c.requests++;
    if (canary) c.canary++;
    if (outcome === LABEL.LOST) return; // no reply: its router went away first
    if (failure) {
      c.errors++;
      if (canary) c.canaryErrors++;
    } else c.answered++;
    if (ms > this.lateTimeoutMs) c.lates++;
    c.delaySumMs += ms;
    if (ms > c.maxDelayMs) c.maxDelayMs = ms;
  }

  /** A connection or session refused (side: as far as it is known). */
  refused(side = null) {
    this.cell(NO_QUERY, side).refusals++;
  }

  roll(t) {
    this.past.push(this.current);
    const start = halfHourStart(t);
    this.current = new Period(start, nextHalfHour(start));
    const oldest = start - (this.keep - 1) * HALF_HOUR_MS;
    while (this.past.length > 0 && (this.past[0].start < oldest || this.past.length > this.keep - 1)) this.past.shift();
  }

  /** The kept half hours, oldest first, as /status shows them: sums and maxima per row. */
  toJSON() {
    const t = this.now();
    if (t >= this.current.end) this.roll(t);
    return {
      lateTimeoutMs: this.lateTimeoutMs,
      periods: [...this.past, this.current].map(periodJson),
    };
  }
}

/**
 * The entry of key in map, made by make() when the map has room for it (fewer than max keys),
 * else the entry of "(other)": router text cannot grow a half hour without bound.
 */
function bounded(map, key, max, make) {
  const k = map.size < max ? key : OTHER;
  let e = map.get(k);
  if (e === undefined) {
    e = make();
    map.set(k, e);
  }
  return e;
}

/** Router text as a label: printable ASCII, at most MAX_LABEL characters. */
const label = (text) => (text.length > MAX_LABEL ? `${printable(text, MAX_LABEL - 3)}...` : printable(text));

/** A half hour as JSON: one row per side and subtype with anything in it, sides and subtypes as printable labels. */
function periodJson(p) {
  const rows = new Map();
  for (const [side, cells] of p.sides) {
    for (const [subtype, c] of cells) {
      if (c.requests === 0 && c.refusals === 0) continue;
      addRow(rows, { side: label(side), subtype: label(subtype), ...c });
    }
  }
  return {
    start: new Date(p.start).toISOString(), startMs: p.start, endMs: p.end, local: localTime(p.start), rows: sortRows([...rows.values()]),
  };
}

/** Adds a row into rows (keyed by side and subtype): sums added, maxima kept. */
function addRow(rows, r) {
  const key = `${r.side}\u0000${r.subtype}`;
  const m = rows.get(key);
  if (m === undefined) {
    rows.set(key, {
      side: r.side,
      subtype: r.subtype,
      requests: r.requests,
      answered: r.answered,
      errors: r.errors,
      lates: r.lates,
      delaySumMs: r.delaySumMs,
      maxDelayMs: r.maxDelayMs,
      refusals: r.refusals,
      canary: r.canary,
      canaryErrors: r.canaryErrors,
    });
    return;
  }
  for (const k of ['requests', 'answered', 'errors', 'lates', 'delaySumMs', 'refusals', 'canary', 'canaryErrors']) m[k] += r[k];
  m.maxDelayMs = Math.max(m.maxDelayMs, r.maxDelayMs);
}

const sortRows = (rows) => rows.sort((a, b) => (a.side === b.side ? (a.subtype < b.subtype ? -1 : a.subtype > b.subtype ? 1 : 0) : a.side < b.side ? -1 : 1));

/** The local clock time of t as the router writes DateTime: "YYYY-MM-DD HH:MM". */
function localTime(t) {
  const d = new Date(t);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

/**
 * One view from several processes' (a cluster's workers'): half hours matched by their start,
 * rows by side and subtype, counts and delay sums added, maxima the largest. Only the last `keep`.
 */
function mergeHalfHours(views, keep = KEEP) {
  const byStart = new Map();
  for (const v of views) {
    for (const p of v.periods) {
      let m = byStart.get(p.startMs);
      if (m === undefined) {
        m = { ...p, rows: new Map() };
        byStart.set(p.startMs, m);
      }
      for (const r of p.rows) addRow(m.rows, r);
    }
  }
  const periods = [...byStart.values()].sort((a, b) => a.startMs - b.startMs).slice(-keep).map((p) => ({ ...p, rows: sortRows([...p.rows.values()]) }));
  return { lateTimeoutMs: views.length > 0 ? views[0].lateTimeoutMs : null, periods };
}

const CSV_COLUMNS = Object.freeze(['DateTime', 'Side', 'Subtype', 'RequestsToHalf', 'AnsweredToHalf', 'ErrorsToHalf', 'AvgDelayToHalf', 'MaxDelayToHalf',
  'LatesToHalf', 'RefusalsToHalf', 'DateTimeUTC', 'CanaryToHalf', 'CanaryErrorsToHalf']);

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; a leading =+-@ is quoted away from spreadsheet formulas. */
function csvField(v) {
  const s = String(v);
  if (/^[=+\-@]/.test(s)) return `"'${s.replace(/"/g, '""')}"`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The view as CSV, one line per half hour, side and subtype, oldest first; delays in whole ms as the router's columns are. */
function halfHourCsv(view) {
  const lines = [CSV_COLUMNS.join(',')];
  for (const p of view.periods) {
    for (const r of p.rows) {
      const replies = r.answered + r.errors;
      lines.push([p.local, r.side, r.subtype, r.requests, r.answered, r.errors, replies === 0 ? '' : Math.round(r.delaySumMs / replies),
        replies === 0 ? '' : Math.round(r.maxDelayMs), r.lates, r.refusals, p.start, r.canary, r.canaryErrors].map(csvField).join(','));
    }
  }
  return `${lines.join('\r\n')}\r\n`;
}

module.exports = {
  HalfHours, mergeHalfHours, halfHourCsv, halfHourStart, nextHalfHour, HALF_HOUR_MS, CSV_COLUMNS, csvField,
};
