'use strict';

// The router's side of a capture, played again against a host: every router->host frame of each
// TCP stream is sent, byte for byte, on a connection of its own, at its captured time (scaled by
// `speed`, or back to back), and each answer is compared with the one captured for the same
// InvokeID: type and status, and with `tags` the tags too.

const { des, MESSAGE_TYPES: T, DIRECTION } = require('../../lib/protocol');
const { decodeCapture } = require('../decode/reassemble');
const { Peer } = require('../conformance/peer');

/** How long to wait for the last answers once every frame of a stream is sent. */
const TAIL_WAIT_MS = 3000;

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

/** Replays one stream on a fresh connection; resolves with its comparisons. */
async function replayStream(stream, {
  target, speed, desKey, tags, start,
}) {
  // Times are from the capture's first packet, so streams keep their places (a reconnect after a close).
  if (speed !== Infinity && stream.requests[0].ts) await pause((stream.requests[0].ts * 1000) / speed - (Date.now() - start));
  const peer = await Peer.connect(target, { name: stream.name });
  const t0 = 0;
  const expected = []; // {request, invokeId}
  for (const r of stream.requests) {
    if (speed !== Infinity && r.ts !== null) {
      const due = ((r.ts - t0) * 1000) / speed - (Date.now() - start);
      if (due > 0) await pause(due);
    }
    const m = r.message;
    if (m && m.typeId === T.OPEN_REQ && m.encryption === 1 && desKey && m.sessionKey) {
      const k = des.openSessionKey(desKey, m.sessionKey); // the host's answers are decrypted from this OPEN on
      if (k !== null) peer.setCipher(des.createSessionCipher(k));
    }
    peer.send(r.bytes);
    const invokeId = m ? m.invokeId : r.error && r.bytes.length >= 12 ? r.bytes.readUInt32BE(8) : undefined;
    if (invokeId !== undefined) expected.push({ request: r, invokeId });
  }
  const wanted = new Set(expected.map((e) => e.invokeId));
  await peer.until(() => (expected.every((e) => peer.messages.some((m) => m.invokeId === e.invokeId)) ? true : undefined), TAIL_WAIT_MS);
  await pause(100);
  peer.close();
  const got = peer.byInvokeId();
  const used = new Map();
  const rows = expected.map(({ request, invokeId }) => {
    const n = used.get(invokeId) || 0;
    used.set(invokeId, n + 1);
    const captured = (stream.answers.get(invokeId) || [])[n];
    const replayed = (got.get(invokeId) || [])[n];
    return {
      stream: stream.name, request: request.message, requestError: request.error, invokeId, captured, replayed,
      difference: difference(captured, replayed, tags),
    };
  });
  const extra = [...got.entries()].filter(([id, list]) => !wanted.has(id) || list.length > (used.get(id) || 0));
  return { rows, extra: extra.length, sent: stream.requests.length };
}

/**
 * Replays every stream of a capture, streams at once (sides A and B as they were). options:
 * {target, speed (Infinity: as fast as possible), tags, desKey, port, maxLength}. Resolves with
 * {streams, rows, matched, total, extra}.
 */
async function replay(source, options) {
  const streams = readCapture(source, options);
  const results = await Promise.all(streams.map((s) => replayStream(s, { ...options, start: Date.now() })));
  const rows = results.flatMap((r) => r.rows);
  return {
    streams: streams.length,
    sent: results.reduce((n, r) => n + r.sent, 0),
    rows,
    matched: rows.filter((r) => r.difference === '').length,
    total: rows.length,
    extra: results.reduce((n, r) => n + r.extra, 0),
  };
}

module.exports = {
  replay, readCapture, difference, TAIL_WAIT_MS,
};
