'use strict';

// Queries at a fixed rate over a WireClient, whatever the answers do (an open loop, as a router
// sends): each query's send time is kept, each reply's arrival is the WireClient's, and the
// figures are counted from the router's side.

const { performance } = require('node:perf_hooks');
const { exactlyOnce } = require('./wire');

const TICK_MS = 5;

/**
 * Sends `rate` queries a second for durationMs on c, fields(i) giving the i-th query's fields;
 * resolves once they are sent, with {ids, sentAt}. ids start at firstId.
 */
function sendAtRate(c, { rate, durationMs, fields, firstId = 1000 }) {
  const ids = [];
  const sentAt = new Map();
  const t0 = performance.now();
  return new Promise((resolve) => {
    const tick = () => {
      const elapsed = performance.now() - t0;
      const due = Math.min(Math.floor((elapsed * rate) / 1000), Math.floor((durationMs * rate) / 1000));
      while (ids.length < due) {
        const id = firstId + ids.length;
        sentAt.set(id, performance.now());
        c.query(id, fields(ids.length));
        ids.push(id);
      }
      if (elapsed >= durationMs) resolve({ ids, sentAt });
      else setTimeout(tick, TICK_MS);
    };
    tick();
  });
}

/**
 * What the router saw of the queries sent: {sent, missing, duplicated, ok, failure, late, maxMs,
 * lateBySecond}, late: replies that came lateMs or more after their query (lateBySecond: by the
 * second of the run they were sent in). Waits up to waitMs for the last replies.
 */
async function routerFigures(c, { ids, sentAt }, { lateMs = 300, waitMs = 5000 } = {}) {
  const wanted = new Set(ids);
  const until = performance.now() + waitMs;
  const answered = () => c.messages.filter((m) => wanted.has(m.invokeId)).length;
  while (answered() < ids.length && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
  const replies = c.messages.filter((m) => wanted.has(m.invokeId));
  const { missing, duplicated } = exactlyOnce(replies, ids);
  let ok = 0;
  let failure = 0;
  let late = 0;
  let maxMs = 0;
  const t0 = sentAt.get(ids[0]);
  const lateBySecond = [];
  for (const m of replies) {
    if (m.type === 'QUERY_RESP') ok++;
    else failure++;
    const ms = m.receivedAt - sentAt.get(m.invokeId);
    if (ms >= lateMs) {
      late++;
      const second = Math.floor((sentAt.get(m.invokeId) - t0) / 1000);
      lateBySecond[second] = (lateBySecond[second] || 0) + 1;
    }
    if (ms > maxMs) maxMs = ms;
  }
  return {
    sent: ids.length,
    missing: missing.length,
    duplicated: duplicated.length,
    ok,
    failure,
    late,
    maxMs: Math.round(maxMs),
    lateBySecond: Array.from(lateBySecond, (n) => n || 0),
  };
}

module.exports = { sendAtRate, routerFigures };
