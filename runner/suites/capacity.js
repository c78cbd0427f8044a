'use strict';

// capacity: raise the rate in steps until p99 passes the budget or errors appear; the highest
// rate that held is the sustainable one, and the report says what stopped the next step: the
// backend's errors, an open circuit, the gateway's CPU, its event loop, or latency alone.

const {
  measured, errorCount, errorsByKind, kindsText, progress,
} = require('./common');
const { fixed, num, given } = require('../../simulator/format');

/** Gateway CPU (% of one core) from which the gateway itself is the limit. */
const CPU_BOUND_PCT = 90;
/** Event-loop lag p99 (ms) from which the gateway's loop is the limit. */
const LAG_BOUND_MS = 50;

/** The gateway's own view (its admin port's /status), when the runner started it; null otherwise. */
async function gatewayStatus(ctx) {
  if (!ctx.system || !ctx.system.adminUrl) return null;
  try {
    const res = await fetch(`${ctx.system.adminUrl}/status`, { signal: AbortSignal.timeout(2000) });
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}

/** What kept the failed step from holding, in words, from the step and the gateway's status. */
function limitOf(step, status, budgetMs) {
  const why = [];
  const backend = status && [].concat(status.backend);
  const open = backend ? backend.flatMap((b) => Object.entries(b.circuits || {}).filter(([, c]) => c.state !== 'closed').map(([o]) => o)) : [];
  if (open.length > 0) why.push(`an open circuit (${[...new Set(open)].join(', ')}): queries answered without asking the backend`);
  const failing = backend && backend.find((b) => b.state === 'failing');
  if (failing) why.push(`the backend failing (last error: ${failing.lastError})`);
  const kinds = kindsText(step.errorsByKind);
  if (kinds) why.push(`errors: ${kinds}`);
  if (step.gatewayCpu !== null && step.gatewayCpu >= CPU_BOUND_PCT) why.push(`the gateway's CPU (${fixed(step.gatewayCpu)}% of a core)`);
  const lag = status && Math.max(...status.processes.map((p) => p.eventLoopLag.p99Ms));
  if (lag !== null && lag >= LAG_BOUND_MS) why.push(`the gateway's event loop (lag p99 ${fixed(lag)} ms)`);
  if (why.length === 0 && step.p99 > budgetMs) {
    const cpu = step.gatewayCpu === null ? 'not sampled' : `${fixed(step.gatewayCpu)}%`;
    why.push(`latency alone: p99 ${fixed(step.p99, 1)} ms over the ${given(budgetMs)} ms budget, no errors, gateway CPU ${cpu}`);
  }
  return why.join('; ');
}

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
  let limitedBy = null;
  if (ctx.system) await gatewayStatus(ctx); // the first look starts the gateway's CPU and lag counters afresh
  for (let rate = start; rate <= max; rate += step) {
    bar.update(Math.min(1, (rate - start) / (max - start + 1)), `${num(rate)}/s`);
    const res = await measured(ctx, {}, (router) => router.runOpenLoop({ rate, durationMs: stepS * 1000 }));
    const status = await gatewayStatus(ctx);
    const s = res.summary;
    const errors = errorCount(s);
    const ok = errors === 0 && s.latencyMs.p99 <= budgetMs;
    const gw = res.monitor.processes.gateway;
    const x = {
      rate,
      achieved: s.txPerSec,
      successPct: s.sent > 0 ? (100 * (s.answered - errors)) / s.sent : 0,
      p50: s.latencyMs.p50,
      p99: s.latencyMs.p99,
      max: s.latencyMs.max,
      errors,
      errorsByKind: errorsByKind(s),
      ok,
      gatewayCpu: gw ? gw.cpuMean : null,
    };
    steps.push(x);
    last = res;
    if (!ok) {
      limitedBy = limitOf(x, status, budgetMs);
      break;
    }
    sustainable = rate;
  }
  bar.stop();
  const stop = steps.at(-1);
  return {
    suite: 'capacity',
    title: `capacity: +${given(step)} queries/s every ${given(stepS)} s from ${given(start)} until p99 > ${given(budgetMs)} ms or errors`,
    figures: {
      sustainableRate: sustainable, budgetMs, steps, limitedBy,
    },
    rows: [
      ...steps.map((x) => {
        const cpu = x.gatewayCpu !== null ? `, gateway CPU ${fixed(x.gatewayCpu)}%` : '';
        return [`${num(x.rate)}/s`, `achieved ${fixed(x.achieved)}/s, ${fixed(x.successPct, 1)}% answered ok, p50 ${fixed(x.p50, 2)} ms, `
          + `p99 ${fixed(x.p99, 2)} ms, errors ${num(x.errors)}${cpu} ${x.ok ? 'held' : 'FAILED'}`];
      }),
      [
        'highest sustainable',
        `${num(sustainable)} queries/s (p99 budget ${given(budgetMs)} ms)${stop && stop.ok ? ' (the step limit was reached first)' : ''}`,
      ],
      ['limited by', limitedBy === null ? 'nothing: every step held' : limitedBy],
    ],
    verdict: { pass: sustainable > 0, reasons: sustainable > 0 ? [] : ['not even the first step held'] },
    capacitySteps: steps,
    ...last,
  };
}

module.exports = { capacity, limitOf };
