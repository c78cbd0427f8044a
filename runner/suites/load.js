'use strict';

// load: a fixed rate for a duration, no faults: every query must succeed in time.

const {
  measured, errorCount, errorsByKind, errorsText, kindsText, progress,
} = require('./common');
const { fixed, num, given } = require('../../simulator/format');

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
    title: `load: ${given(rate)} queries/s for ${given(durationS)} s`,
    figures: {
      transactions: s.answered, errors, txPerSec: s.txPerSec, latencyMs: l, errorsByKind: errorsByKind(s),
    },
    rows: [
      ['transactions', `${num(s.answered)} of ${num(s.sent)} sent`],
      ['errors', `${num(errors)}${errors ? ` (${kindsText(errorsByKind(s))})` : ''}`],
      ['throughput', `${fixed(s.txPerSec)} tx/s`],
      ['latency', `p50 ${fixed(l.p50, 2)} ms, p90 ${fixed(l.p90, 2)}, p99 ${fixed(l.p99, 2)}, p99.9 ${fixed(l.p999, 2)}, max ${fixed(l.max, 2)}`],
    ],
    verdict: { pass: errors === 0, reasons: errors ? [errorsText(s)] : [] },
    ...res,
  };
}

module.exports = { load };
