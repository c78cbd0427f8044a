'use strict';

// speed: N sequential heartbeats on a fresh session, then N sequential queries (window 1).

const { measured, errorCount, errorsText } = require('./common');
const { newHistogram } = require('../../simulator/stats');
const { fixed, num, given } = require('../../simulator/format');

async function speed(ctx, { count = 10 } = {}) {
  const hb = newHistogram();
  const transactions = []; // {n, kind, ms}: what the speed suite's own chart shows
  const res = await measured(ctx, { timelineMs: 100 }, async (router) => {
    const conn = router.connections[0];
    const t0 = performance.now();
    for (let i = 0; i < count; i++) {
      const rtt = await conn.ping();
      hb.recordValue(Math.max(1, Math.round(rtt * 1000)));
      transactions.push({ n: i + 1, kind: 'heartbeat', ms: rtt });
    }
    const heartbeatMs = performance.now() - t0;
    const q0 = performance.now();
    const onReply = (msg, latencyMs) => transactions.push({ n: transactions.length - count + 1, kind: 'query', ms: latencyMs });
    router.on('reply', onReply);
    await router.runClosedLoop({ window: 1, count });
    await router.drain(2000);
    router.off('reply', onReply);
    return { heartbeatMs, queryMs: performance.now() - q0 };
  });
  const s = res.summary;
  const ms = (h, p) => h.getValueAtPercentile(p) / 1000;
  const figures = {
    heartbeats: {
      transactions: count, elapsedMs: res.extra.heartbeatMs, avgMs: res.extra.heartbeatMs / count, p50Ms: ms(hb, 50), p99Ms: ms(hb, 99),
    },
    queries: {
      transactions: s.answered, elapsedMs: res.extra.queryMs, avgMs: res.extra.queryMs / count, p50Ms: s.latencyMs.p50, p99Ms: s.latencyMs.p99,
    },
  };
  const errors = errorCount(s);
  const timing = (f) => `${fixed(f.elapsedMs, 1)} ms; avg ${fixed(f.avgMs, 3)} ms, p50 ${fixed(f.p50Ms, 3)} ms, p99 ${fixed(f.p99Ms, 3)} ms`;
  return {
    suite: 'speed',
    title: `speed: ${given(count)} sequential heartbeats, then ${given(count)} sequential queries`,
    figures,
    rows: [
      ['heartbeats', `${num(count)} in ${timing(figures.heartbeats)}`],
      ['queries', `${num(s.answered)} in ${timing(figures.queries)}`],
      ['errors', num(errors)],
    ],
    verdict: { pass: errors === 0 && s.ok === count, reasons: errors ? [errorsText(s)] : [] },
    transactions,
    ...res,
  };
}

module.exports = { speed };
