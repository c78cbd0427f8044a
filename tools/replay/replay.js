'use strict';

// The router's side of a capture, played again against a host: every router->host frame of each
// TCP stream is sent, byte for byte, on a connection of its own, at its captured time (scaled by
// `speed`, or back to back), and each answer is compared with the one captured for the same
// InvokeID on the same connection: type and status, and with `tags` the tags too. Each request
// ends as one of match, differ, missing or late; answers to no request are extra.

const { performance } = require('node:perf_hooks');
const { des, MESSAGE_TYPES: T, DIRECTION } = require('../../lib/protocol');
const { decodeCapture } = require('../decode/reassemble');
const { ReplayConnection } = require('./connection');

/** Once every frame of a stream is sent: how long the host may stay silent before the answers still missing are missing. */
const TAIL_WAIT_MS = 3000;
/** After the last answer: how long a second reply has to show up. */
const QUIET_MS = 100;
/** The router's RequestTimeout (docs/protocol.md): an answer later than this, the router no longer takes. */
const REQUEST_TIMEOUT_MS = 300;

/** The capture as streams: {name, requests: [{ts, bytes, message, error}], answers: Map invokeId -> [messages]}. */
function readCapture(source, { port, desKey, maxLength }) {
  const streams = new Map();
  const streamOf = (name) => {
    if (!streams.has(name)) streams.set(name, { name, requests: [], answers: new Map() });
    return streams.get(name);
  };
  decodeCapture(source, {
    port,
    desKey,
    maxLength,
    keepBytes: true,
    withStream: () => true,
    emit: (e) => {
      const s = streamOf(e.stream);
      if (e.direction === DIRECTION.ROUTER_TO_HOST) {
        if (e.bytes) s.requests.push({ ts: e.ts, bytes: e.bytes, message: e.message, error: e.error });
      } else if (e.message && e.message.invokeId !== undefined) {
        const list = s.answers.get(e.message.invokeId) || [];
        list.push(e.message);
        s.answers.set(e.message.invokeId, list);
      }
    },
  });
  return [...streams.values()].filter((s) => s.requests.length > 0);
}

const TAG_FIELDS = ['ced', 'cdpd', 'vars', 'ecc', 'eccArrays', 'error'];
const tagsOf = (m) => JSON.stringify(TAG_FIELDS.map((k) => (m[k] === undefined ? null : m[k])));

/** Why two answers differ ('' when they match): type, status, and with tags the tags. */
function difference(captured, replayed, tags) {
  if (replayed === undefined) return 'no answer';
  if (captured === undefined) return 'answered, but no answer was captured';
  if (captured.type !== replayed.type) return 'type';
  if (captured.status !== replayed.status) return 'status';
  if (tags && tagsOf(captured) !== tagsOf(replayed)) return 'tags';
  return '';
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** A row's verdict from its comparison: match, differ, missing (no answer) or late (after the router's RequestTimeout). */
function verdictOf(row, { tags, lateMs }) {
  row.difference = difference(row.captured, row.replayed, tags);
  if (row.replayed !== undefined && lateMs !== null && row.ms > lateMs) {
    row.difference = `late: ${Math.round(row.ms)} ms`;
    return 'late';
  }
  if (row.difference === '') return 'match';
  return row.replayed === undefined ? 'missing' : 'differ';
}

/**
 * Replays one stream on a fresh connection; resolves with its rows and what came besides. Each
 * answer is matched as it arrives: the requests waiting per InvokeID, in the order they were
 * sent, so that the work grows with the capture, not with its square.
 */
async function replayStream(stream, {
  target, speed, desKey, tags, start, lateMs,
}) {
  // Times are from the capture's first packet, so streams keep their places (a reconnect after a close).
  if (speed !== Infinity && stream.requests[0].ts) await pause((stream.requests[0].ts * 1000) / speed - (Date.now() - start));
  const waiting = new Map(); // invokeId -> rows sent and not yet answered, oldest first
  const rows = [];
  const seen = new Map(); // invokeId -> requests sent with it so far: the n-th is compared with the n-th captured answer
  let open = 0;
  let extra = 0;
  let undecoded = 0;
  let events = 0;
  let lastHeard = 0;
  let wake = null;
  const handlers = {
    onAnswer(m, at) {
      lastHeard = at;
      if (m.invokeId === undefined) { // FAILURE_EVENT: about the session, to no request
        events++;
        return;
      }
      const list = waiting.get(m.invokeId);
      if (list === undefined) {
        extra++;
        return;
      }
      const row = list.shift();
      if (list.length === 0) waiting.delete(m.invokeId);
      row.replayed = m;
      row.ms = at - row.sentAt;
      if (--open === 0 && wake !== null) wake();
    },
    onUndecoded() {
      undecoded++;
    },
    onClose() {
      if (wake !== null) wake();
    },
  };
  let conn;
  try {
    conn = await ReplayConnection.connect(target, handlers);
  } catch (err) { // this stream's requests are not sent: each is missing, with the reason
    const rows = stream.requests.filter((r) => r.message && r.message.invokeId !== undefined).map((r) => {
      const n = seen.get(r.message.invokeId) || 0;
      seen.set(r.message.invokeId, n + 1);
      return {
        stream: stream.name, request: r.message, invokeId: r.message.invokeId, captured: (stream.answers.get(r.message.invokeId) || [])[n],
        replayed: undefined, ms: null, difference: `not sent: cannot connect (${err.code || err.message})`, verdict: 'missing',
      };
    });
    return {
      rows, extra: 0, undecoded: 0, events: 0, sent: 0,
    };
  }
  for (const r of stream.requests) {
    if (speed !== Infinity && r.ts !== null) {
      const due = (r.ts * 1000) / speed - (Date.now() - start);
      if (due > 0) await pause(due);
    }
    const m = r.message;
    if (m && m.typeId === T.OPEN_REQ && m.encryption === 1 && desKey && m.sessionKey) {
      const k = des.openSessionKey(desKey, m.sessionKey); // the host's answers are decrypted from this OPEN on
      if (k !== null) conn.setCipher(des.createSessionCipher(k));
    }
    const invokeId = m ? m.invokeId : r.error && r.bytes.length >= 12 ? r.bytes.readUInt32BE(8) : undefined;
    let row = null;
    if (invokeId !== undefined) {
      const n = seen.get(invokeId) || 0;
      seen.set(invokeId, n + 1);
      const captured = (stream.answers.get(invokeId) || [])[n];
      row = {
        stream: stream.name, request: m, requestError: r.error, invokeId, captured, replayed: undefined, ms: null, sentAt: 0,
      };
      rows.push(row);
      if (waiting.has(invokeId)) waiting.get(invokeId).push(row);
      else waiting.set(invokeId, [row]);
      open++;
    }
    const at = await conn.send(r.bytes);
    if (at === null) break; // the host closed the connection: what is left is not sent, and not answered
    if (row !== null) row.sentAt = at;
  }
  // The host may take its time with a burst: the answers still missing are counted missing once it has been silent this long.
  lastHeard = Math.max(lastHeard, performance.now());
  while (open > 0 && !conn.closed) {
    const silent = performance.now() - lastHeard;
    if (silent >= TAIL_WAIT_MS) break;
    let timer;
    await new Promise((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, TAIL_WAIT_MS - silent);
    });
    clearTimeout(timer);
    wake = null;
  }
  if (!conn.closed) await pause(QUIET_MS); // a second reply to the last request comes now or not at all
  conn.close();
  for (const row of rows) row.verdict = verdictOf(row, { tags, lateMs });
  return {
    rows, extra: extra + undecoded, undecoded, events, sent: stream.requests.length,
  };
}

/** The five counts of a replay: rows by verdict, and answers to no request. */
function countsOf(rows, extra) {
  const counts = {
    match: 0, differ: 0, missing: 0, late: 0, extra,
  };
  for (const r of rows) counts[r.verdict]++;
  return counts;
}

/**
 * Replays every stream of a capture, streams at once (sides A and B as they were). options:
 * {target, speed (Infinity: as fast as possible), tags, desKey, port, maxLength, requestTimeoutMs
 * (an answer later than this is late; not judged as fast as possible)}. Resolves with {streams,
 * sent, rows, total, counts: {match, differ, missing, late, extra}, undecoded, events, same}.
 */
async function replay(source, options) {
  const streams = readCapture(source, options);
  const lateMs = options.speed === Infinity ? null : options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const start = Date.now();
  const results = await Promise.all(streams.map((s) => replayStream(s, { ...options, start, lateMs })));
  const rows = results.flatMap((r) => r.rows);
  const counts = countsOf(rows, results.reduce((n, r) => n + r.extra, 0));
  return {
    streams: streams.length,
    sent: results.reduce((n, r) => n + r.sent, 0),
    rows,
    total: rows.length,
    counts,
    undecoded: results.reduce((n, r) => n + r.undecoded, 0),
    events: results.reduce((n, r) => n + r.events, 0),
    lateJudged: lateMs !== null,
    same: counts.match === rows.length && counts.extra === 0,
  };
}

module.exports = {
  replay, readCapture, difference, TAIL_WAIT_MS, REQUEST_TIMEOUT_MS,
};
