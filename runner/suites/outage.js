'use strict';

// outage: open-loop load while the REST simulator goes slow (past the deadline), then down (every
// request a 500), then comes back. The gateway runs with an answer cache and a fallback answer
// (OUTAGE_CONFIG), so calls keep routing: what it answered each second, by outcome (ok, stale,
// fallback, host error), is read from its own metrics and charted with the fault windows marked.
// Passes when every query got a QUERY_RESP in time and the backend's answers came back after it.

const {
  measured, errorCount, errorsByKind, errorsText, progress,
} = require('./common');
const { fixed, num, given } = require('../../simulator/format');

/** The gateway settings this suite runs with (written to a config file by runner/index.js). */
const OUTAGE_CONFIG = Object.freeze({
  cache: {
    ttlMs: 2000, staleIfErrorMs: 600_000, maxEntries: 10_000, key: ['subtype', 'clid'],
  },
  fallback: { vars: { 2: 'default-route' }, ecc: { 'user.mode': 'degraded' } },
});

/** The phases, as fractions of the run: the fault each applies to the REST simulator. */
// The back phase is the longest: recovery (the circuit's next probe, at most
// breaker.maxHalfOpenAfterMs after the backend returns) is what the run is for.
const PHASES = Object.freeze([
  { name: 'normal', from: 0, faults: {} },
  { name: 'slow', from: 0.2, faults: { latency: 400 } }, // past the 250 ms deadline
  { name: 'down', from: 0.35, faults: { errorRate: 1 } },
  { name: 'back', from: 0.6, faults: {} },
]);

// app_error (the backend's own "no") is a group of its own, never a host error: the status page's split.
const OUTCOME_GROUPS = Object.freeze({
  ok: ['ok', 'cached', 'duplicate'],
  stale: ['stale'],
  fallback: ['fallback'],
  'app error': ['app_error'],
  'host error': ['host_error', 'deadline', 'lost_router_gone'],
});

/** Sum of ged145_queries_total by outcome, from the gateway's Prometheus text. */
async function scrape(adminUrl) {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const out = {};
  for (const m of text.matchAll(/^ged145_queries_total\{subtype="[^"]*",outcome="([^"]+)"\} (\d+)/gm)) out[m[1]] = (out[m[1]] || 0) + Number(m[2]);
  return out;
}

const group = (counts) => Object.fromEntries(Object.entries(OUTCOME_GROUPS).map(([g, names]) => [g, names.reduce((a, n) => a + (counts[n] || 0), 0)]));

async function setFaults(backendUrl, faults) {
  const body = {
    latency: 0, errorRate: 0, resetRate: 0, hangRate: 0, ...faults,
  };
  const res = await fetch(`${backendUrl}/admin/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`the REST simulator refused the faults: HTTP ${res.status}`);
}

async function outage(ctx, { rate = 200, durationS = 40 } = {}) {
  if (!ctx.system) throw new Error('the outage suite runs its own REST simulator and gateway; it cannot use --target');
  const { adminUrl, backendUrl } = ctx.system;
  const bar = progress(ctx, 'outage');
  const seconds = [];
  const windows = PHASES.slice(1, 3).map((p, i) => ({ name: p.name, from: p.from * durationS, to: PHASES[i + 2].from * durationS }));
  const res = await measured(ctx, {
    templates: [{ subtype: 'customer.lookup', clid: '555{rand:1000000-1000299}', dn: '8005551000' }],
  }, async (router) => {
    const t0 = Date.now();
    let last = group(await scrape(adminUrl));
    let phase = 0;
    const tick = setInterval(async () => {
      const t = (Date.now() - t0) / 1000;
      while (phase + 1 < PHASES.length && t >= PHASES[phase + 1].from * durationS) {
        phase++;
        setFaults(backendUrl, PHASES[phase].faults).catch(() => {});
      }
      const now = group(await scrape(adminUrl).catch(() => ({})));
      const point = { t: Math.round(t), phase: PHASES[phase].name };
      for (const g of Object.keys(OUTCOME_GROUPS)) point[g] = Math.max(0, (now[g] || 0) - (last[g] || 0));
      seconds.push(point);
      last = now;
      bar.update(t / durationS);
    }, 1000);
    try {
      await router.runOpenLoop({ rate, durationMs: durationS * 1000 });
    } finally {
      clearInterval(tick);
      await setFaults(backendUrl, {});
    }
  });
  bar.stop();
  const s = res.summary;
  const byPhase = Object.fromEntries(PHASES.map((p) => [p.name, Object.fromEntries(Object.keys(OUTCOME_GROUPS).map((g) => [g, 0]))]));
  for (const point of seconds) for (const g of Object.keys(OUTCOME_GROUPS)) byPhase[point.phase][g] += point[g];
  const errors = errorCount(s);
  const reasons = [];
  if (errors) reasons.push(errorsText(s, 'queries without a QUERY_RESP in time'));
  if (byPhase.back.ok === 0) reasons.push('no answer from the backend after it came back');
  if (byPhase.slow.stale + byPhase.slow.fallback + byPhase.down.stale + byPhase.down.fallback === 0) reasons.push('the outage was not felt');
  const secs = (x) => fixed(x, Number.isInteger(x) ? 0 : 1);
  const fmt = (o) => Object.entries(o).map(([g, n]) => `${g} ${num(n)}`).join(', ');
  return {
    suite: 'outage',
    title: `outage: ${given(rate)} queries/s for ${given(durationS)} s; the backend slow (400 ms) from ${secs(windows[0].from)} s, `
      + `down from ${secs(windows[1].from)} s, back at ${secs(windows[1].to)} s`,
    figures: {
      transactions: s.answered, errors, byPhase, windows, perSecond: seconds, config: OUTAGE_CONFIG,
    },
    rows: [
      ['transactions', `${num(s.answered)} of ${num(s.sent)} sent; ${num(s.ok)} QUERY_RESP`],
      ...PHASES.map((p) => [`answers while ${p.name}`, fmt(byPhase[p.name])]),
      ['router errors', errors ? fmt(errorsByKind(s)) : 'none'],
    ],
    verdict: { pass: reasons.length === 0, reasons },
    outcomes: { seconds, windows, groups: Object.keys(OUTCOME_GROUPS) },
    ...res,
  };
}

module.exports = { outage, OUTAGE_CONFIG };
