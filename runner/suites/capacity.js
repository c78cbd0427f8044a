'use strict';

// capacity: raise the rate in steps until p99 passes the budget or errors appear; the highest
// rate that held is the sustainable one.

const { measured, errorCount, progress } = require('./common');

/** Unmeasured load before the first step: a cold gateway (JIT, first backend connections) would fail it. */
const WARMUP_S = 3;

async function capacity(ctx, {
  start = 500, step = 500, max = 20_000, stepS = 10, budgetMs = 50, warmupS = WARMUP_S,
} = {}) {
  const steps = [];
  const bar = progress(ctx, 'capacity');
  if (warmupS > 0) {
    bar.update(0, 'warm-up');
    await measured(ctx, {}, (router) => router.runOpenLoop({ rate: start, durationMs: warmupS * 1000 }));
  }
  let sustainable = 0;
  let last;
  for (let rate = start; rate <= max; rate += step) {
    bar.update(Math.min(1, (rate - start) / (max - start + 1)), `${rate}/s`);
    const res = await measured(ctx, {}, (router) => router.runOpenLoop({ rate, durationMs: stepS * 1000 }));
    const s = res.summary;
    const errors = errorCount(s);
    const ok = errors === 0 && s.latencyMs.p99 <= budgetMs;
    const gw = res.monitor.processes.gateway;
    steps.push({
      rate, achieved: s.txPerSec, p50: s.latencyMs.p50, p99: s.latencyMs.p99, max: s.latencyMs.max, errors, ok, gatewayCpu: gw ? gw.cpuMean : null,
    });
    last = res;
    if (!ok) break;
    sustainable = rate;
  }
  bar.stop();
  const stop = steps.at(-1);
  return {
    suite: 'capacity',
    title: `capacity: +${step} queries/s every ${stepS} s from ${start} until p99 > ${budgetMs} ms or errors`,
    figures: { sustainableRate: sustainable, budgetMs, steps },
    rows: [
      ...steps.map((x) => {
        const cpu = x.gatewayCpu !== null ? `, gateway CPU ${x.gatewayCpu.toFixed(0)}%` : '';
        return [`${x.rate}/s`, `p50 ${x.p50.toFixed(2)} ms, p99 ${x.p99.toFixed(2)} ms, errors ${x.errors}${cpu} ${x.ok ? 'held' : 'FAILED'}`];
      }),
      [
        'highest sustainable',
        `${sustainable.toLocaleString('en-US')} queries/s (p99 budget ${budgetMs} ms)${stop && stop.ok ? ' (the step limit was reached first)' : ''}`,
      ],
    ],
    verdict: { pass: sustainable > 0, reasons: sustainable > 0 ? [] : ['not even the first step held'] },
    capacitySteps: steps,
    ...last,
  };
}

module.exports = { capacity };
