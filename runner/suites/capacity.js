'use strict';

// capacity: raise the rate in steps until p99 passes the budget or errors appear; the highest
// rate that held is the sustainable one, and the report says what stopped the next step: the
// backend's errors, an open circuit, the gateway's CPU, its event loop, or latency alone.

const {
  measured, errorCount, errorsByKind, progress,
} = require('./common');

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
  const kinds = Object.entries(step.errorsByKind).sort((a, b) => b[1] - a[1]);
  if (kinds.length > 0) why.push(`errors: ${kinds.map(([k, v]) => `${k} ${v}`).join(', ')}`);
  if (step.gatewayCpu !== null && step.gatewayCpu >= CPU_BOUND_PCT) why.push(`the gateway's CPU (${step.gatewayCpu.toFixed(0)}% of a core)`);
  const lag = status && Math.max(...status.processes.map((p) => p.eventLoopLag.p99Ms));
  if (lag !== null && lag >= LAG_BOUND_MS) why.push(`the gateway's event loop (lag p99 ${lag.toFixed(0)} ms)`);
  if (why.length === 0 && step.p99 > budgetMs) {
    const cpu = step.gatewayCpu === null ? 'not sampled' : `${step.gatewayCpu.toFixed(0)}%`;
    why.push(`latency alone: p99 ${step.p99.toFixed(1)} ms over the ${budgetMs} ms budget, no errors, gateway CPU ${cpu}`);
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
    bar.update(Math.min(1, (rate - start) / (max - start + 1)), `${rate}/s`);
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
    title: `capacity: +${step} queries/s every ${stepS} s from ${start} until p99 > ${budgetMs} ms or errors`,
    figures: {
      sustainableRate: sustainable, budgetMs, steps, limitedBy,
    },
    rows: [
      ...steps.map((x) => {
        const cpu = x.gatewayCpu !== null ? `, gateway CPU ${x.gatewayCpu.toFixed(0)}%` : '';
        return [`${x.rate}/s`, `achieved ${Math.round(x.achieved)}/s, ${x.successPct.toFixed(1)}% answered ok, p50 ${x.p50.toFixed(2)} ms, `
          + `p99 ${x.p99.toFixed(2)} ms, errors ${x.errors}${cpu} ${x.ok ? 'held' : 'FAILED'}`];
      }),
      [
        'highest sustainable',
        `${sustainable.toLocaleString('en-US')} queries/s (p99 budget ${budgetMs} ms)${stop && stop.ok ? ' (the step limit was reached first)' : ''}`,
      ],
      ['limited by', limitedBy === null ? 'nothing: every step held' : limitedBy],
    ],
    verdict: { pass: sustainable > 0, reasons: sustainable > 0 ? [] : ['not even the first step held'] },
    capacitySteps: steps,
    ...last,
  };
}

module.exports = { capacity, limitOf };
