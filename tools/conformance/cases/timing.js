'use strict';

// Timing (docs/protocol.md section 6): what the host must beat, the router's RequestTimeout and
// HeartbeatTimeout of 300 ms, including while queries are in flight.

const { serialize, ROUTER_REQUEST_TIMEOUT_MS: LIMIT } = require('../../../lib/protocol');
const { brief, check } = require('../context');

const QUERY_DEADLINE = "a query's reply within `RequestTimeout` (300 ms)";
const HEARTBEAT_DEADLINE = "a heartbeat's within `HeartbeatTimeout` (300 ms)";

/** Sends a heartbeat; resolves with [its reply, ms from send to reply], or the case fails (no reply, another type). */
async function heartbeat(t, peer, ms = 2000) {
  const id = t.id();
  const at = peer.send(serialize.heartbeatReq(id));
  const reply = await t.reply(peer, id, 'HEARTBEAT_REQ', ms);
  return [reply, reply.receivedAt - at];
}

/** A reply past the router's limit fails as late, naming what came and when. */
function inTime(reply, took, what, limitName) {
  check(took <= LIMIT, `a late reply: ${brief(reply)} ${ms(took)} after ${what}, past ${limitName} (${LIMIT} ms)`, { cause: 'late reply', marks: [reply] });
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const ms = (v) => `${v < 10 ? v.toFixed(2) : Math.round(v)} ms`;

/** Sends `count` queries keeping `window` in flight; the latency of each reply, sorted. */
async function closedLoop(t, peer, count, window, onSent = () => {}) {
  const sentAt = new Map();
  const latencies = [];
  let sent = 0;
  const sendOne = () => {
    const f = t.queryFields();
    sentAt.set(f.invokeId, peer.send(serialize.queryReq(f)));
    sent++;
    onSent(sent);
  };
  const seen = new Set();
  while (sent < Math.min(window, count)) sendOne();
  await peer.until(() => {
    for (const m of peer.messages) {
      if (seen.has(m) || !sentAt.has(m.invokeId)) continue;
      seen.add(m);
      latencies.push(m.receivedAt - sentAt.get(m.invokeId));
      sentAt.delete(m.invokeId);
      if (sent < count) sendOne();
    }
    return latencies.length >= count ? true : undefined;
  }, 20_000);
  return latencies.sort((a, b) => a - b);
}

module.exports = [
  {
    id: 'ged145/timing/1',
    title: 'a query is answered within the router\'s RequestTimeout',
    level: 'MUST',
    section: '6',
    requirement: QUERY_DEADLINE,
    expected: `each of 20 queries, sent one after the other, answered within ${LIMIT} ms`,
    async run(t) {
      const peer = await t.session();
      let worst = 0;
      for (let i = 0; i < 20; i++) {
        const f = t.queryFields();
        const at = peer.send(serialize.queryReq(f));
        const r = await t.reply(peer, f.invokeId, 'the query', 2000);
        const took = r.receivedAt - at;
        inTime(r, took, `QUERY_REQ id=${f.invokeId}`, 'RequestTimeout');
        worst = Math.max(worst, took);
      }
      return `20 queries, the slowest answered in ${ms(worst)}`;
    },
  },
  {
    id: 'ged145/timing/2',
    title: 'a query whose backend is slow is still answered within RequestTimeout',
    level: 'MUST',
    section: '6',
    requirement: QUERY_DEADLINE,
    needs: 'slowSubtype',
    expected: `a reply (a FAILURE_CONF, say) to each of 5 queries of the slow subtype within ${LIMIT} ms`,
    async run(t) {
      const peer = await t.session();
      const sent = [];
      for (let i = 0; i < 5; i++) {
        const f = t.queryFields({ subtype: t.options.slowSubtype });
        sent.push([f.invokeId, peer.send(serialize.queryReq(f))]);
      }
      const byId = await t.replies(peer, sent.map(([id]) => id), 2000);
      let worst = null;
      for (const [id, at] of sent) {
        const took = byId.get(id).receivedAt - at;
        if (worst === null || took > worst.took) worst = { took, reply: byId.get(id), id };
      }
      inTime(worst.reply, worst.took, `QUERY_REQ id=${worst.id} of the slow subtype`, 'RequestTimeout');
      return `5 queries, each answered within ${ms(worst.took)} (${brief(byId.get(sent[0][0]))})`;
    },
  },
  {
    id: 'ged145/timing/3',
    title: 'query latency against RequestTimeout, 500 queries ten at a time',
    level: 'INFO',
    section: '6',
    requirement: QUERY_DEADLINE,
    expected: `p50, p99 and max reply time; how many past ${LIMIT} ms`,
    timeoutMs: 30_000,
    async run(t) {
      const peer = await t.session();
      const lat = await closedLoop(t, peer, 500, 10);
      const over = lat.filter((v) => v > LIMIT).length;
      const measured = {
        replies: lat.length, p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), maxMs: lat[lat.length - 1], overRequestTimeout: over,
      };
      t.measured = measured;
      return `${lat.length} replies: p50 ${ms(measured.p50Ms)}, p99 ${ms(measured.p99Ms)}, max ${ms(measured.maxMs)}; ${over} past ${LIMIT} ms`;
    },
  },
  {
    id: 'ged145/heartbeat/1',
    title: 'HEARTBEAT_REQ is answered HEARTBEAT_CONF within HeartbeatTimeout',
    level: 'MUST',
    section: '6',
    requirement: HEARTBEAT_DEADLINE,
    expected: `HEARTBEAT_CONF with its InvokeID within ${LIMIT} ms`,
    async run(t) {
      const peer = await t.session();
      const [reply, took] = await heartbeat(t, peer);
      check(reply.type === 'HEARTBEAT_CONF', `HEARTBEAT_REQ got ${brief(reply)}`, { marks: [reply] });
      inTime(reply, took, 'HEARTBEAT_REQ', 'HeartbeatTimeout');
      return `${brief(reply)} in ${ms(took)}`;
    },
  },
  {
    id: 'ged145/heartbeat/2',
    title: 'a heartbeat behind 200 queries in flight is answered within HeartbeatTimeout',
    level: 'MUST',
    section: '6',
    requirement: HEARTBEAT_DEADLINE,
    expected: `HEARTBEAT_CONF within ${LIMIT} ms of a HEARTBEAT_REQ written right after 200 queries`,
    timeoutMs: 10_000,
    async run(t) {
      const peer = await t.session();
      const frames = Array.from({ length: 200 }, () => t.queryReq());
      peer.send(Buffer.concat(frames));
      const [reply, took] = await heartbeat(t, peer);
      check(reply.type === 'HEARTBEAT_CONF', `HEARTBEAT_REQ got ${brief(reply)}`, { marks: [reply] });
      inTime(reply, took, 'HEARTBEAT_REQ', 'HeartbeatTimeout');
      await t.replies(peer, frames.map((f) => f.readUInt32BE(8)));
      return `HEARTBEAT_CONF in ${ms(took)} with 200 queries ahead of it`;
    },
  },
  {
    id: 'ged145/heartbeat/3',
    title: 'a heartbeat is answered within HeartbeatTimeout while slow queries are in flight',
    level: 'MUST',
    section: '6',
    requirement: HEARTBEAT_DEADLINE,
    needs: 'slowSubtype',
    expected: `HEARTBEAT_CONF within ${LIMIT} ms, with 10 queries of the slow subtype in flight`,
    async run(t) {
      const peer = await t.session();
      const frames = Array.from({ length: 10 }, () => t.queryReq({ subtype: t.options.slowSubtype }));
      peer.send(Buffer.concat(frames));
      const [reply, took] = await heartbeat(t, peer, 3000);
      check(reply.type === 'HEARTBEAT_CONF', `HEARTBEAT_REQ got ${brief(reply)}`, { marks: [reply] });
      inTime(reply, took, 'HEARTBEAT_REQ', 'HeartbeatTimeout');
      return `HEARTBEAT_CONF in ${ms(took)}`;
    },
  },
  {
    id: 'ged145/heartbeat/4',
    title: 'heartbeats are answered by the host itself, never behind queries',
    level: 'SHOULD',
    section: '6',
    requirement: 'and answers heartbeats itself, never behind queries.',
    needs: 'slowSubtype',
    expected: 'HEARTBEAT_CONF before the replies to the queries of the slow subtype sent ahead of it',
    async run(t) {
      const peer = await t.session();
      const frames = Array.from({ length: 5 }, () => t.queryReq({ subtype: t.options.slowSubtype }));
      peer.send(Buffer.concat(frames));
      const [reply] = await heartbeat(t, peer, 3000);
      const ids = new Set(frames.map((f) => f.readUInt32BE(8)));
      const before = peer.messages.slice(0, peer.messages.indexOf(reply)).filter((m) => ids.has(m.invokeId)).length;
      check(before === 0, `HEARTBEAT_CONF came after the replies to ${before} of the 5 slow queries`, {
        cause: 'heartbeats wait behind queries', marks: [reply],
      });
      return 'HEARTBEAT_CONF before any slow query was answered';
    },
  },
  {
    id: 'ged145/heartbeat/5',
    title: 'heartbeat reply time under load, 1000 queries fifty at a time',
    level: 'INFO',
    section: '6',
    requirement: HEARTBEAT_DEADLINE,
    expected: 'p50 and max HEARTBEAT_CONF time of a heartbeat every 50 queries',
    timeoutMs: 30_000,
    async run(t) {
      const peer = await t.session();
      const beats = [];
      await closedLoop(t, peer, 1000, 50, (n) => {
        if (n % 50 === 0) beats.push(heartbeat(t, peer).catch(() => [null, null]));
      });
      const times = (await Promise.all(beats)).map(([r, took]) => (r === null ? Infinity : took)).sort((a, b) => a - b);
      const missing = times.filter((v) => v === Infinity).length;
      t.measured = {
        heartbeats: times.length, p50Ms: percentile(times, 50), maxMs: times[times.length - 1], unanswered: missing,
        overHeartbeatTimeout: times.filter((v) => v > LIMIT).length,
      };
      return `${times.length} heartbeats: p50 ${ms(t.measured.p50Ms)}, max ${ms(t.measured.maxMs)}${missing ? `, ${missing} unanswered` : ''}`;
    },
  },
];
