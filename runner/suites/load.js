'use strict';

// load: a fixed rate for a duration, no faults: every query must succeed in time.

const {
  measured, errorCount, errorsByKind, errorsText, progress,
} = require('./common');

async function load(ctx, { rate = 500, durationS = 20, sides = ['A'], mode } = {}) {
  const bar = progress(ctx, 'load');
  const res = await measured(ctx, { sides, mode }, async (router) => {
    const t0 = Date.now();
    await router.runOpenLoop({ rate, durationMs: durationS * 1000, onTick: () => bar.update((Date.now() - t0) / (durationS * 1000)) });
  });
  bar.stop();
  const s = res.summary;
  const errors = errorCount(s);
  const l = s.latencyMs;
  return {
    suite: 'load',
    title: `load: ${rate} queries/s for ${durationS} s`,
    figures: {
      transactions: s.answered, errors, txPerSec: s.txPerSec, latencyMs: l, errorsByKind: errorsByKind(s),
    },
    rows: [
      ['transactions', `${s.answered.toLocaleString('en-US')} of ${s.sent.toLocaleString('en-US')} sent`],
      ['errors', `${errors}${errors ? ` (${Object.entries(errorsByKind(s)).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`],
      ['throughput', `${Math.round(s.txPerSec).toLocaleString('en-US')} tx/s`],
      ['latency', `p50 ${l.p50.toFixed(2)} ms, p90 ${l.p90.toFixed(2)}, p99 ${l.p99.toFixed(2)}, p99.9 ${l.p999.toFixed(2)}, max ${l.max.toFixed(2)}`],
    ],
    verdict: { pass: errors === 0, reasons: errors ? [errorsText(s)] : [] },
    ...res,
  };
}

module.exports = { load };
