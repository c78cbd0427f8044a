'use strict';

// error: a timed run with writes fragmented at random (0-4 extra splits) and invalid frames
// injected; every induced error must be caught, and nothing else may go wrong.

const { measured, progress, errorSuiteKinds } = require('./common');
const { fixed, num, given } = require('../../simulator/format');

async function error(ctx, { durationS = 60, invalidRate = 0.15, frag = 4, window = 4 } = {}) {
  const bar = progress(ctx, 'error');
  const res = await measured(ctx, { injection: { frag }, invalidRate }, async (router) => {
    const t0 = Date.now();
    await router.runClosedLoop({ window, durationMs: durationS * 1000, onTick: () => bar.update((Date.now() - t0) / (durationS * 1000)) });
  });
  bar.stop();
  const s = res.summary;
  const inducedRejects = s.injected.reject;
  const caughtRejects = s.caught.reject + s.voided.reject;
  const inducedFatal = s.injected.fatal;
  const caughtFatal = s.caught.fatal + s.voided.fatal;
  const violations = Object.values(s.violations).reduce((a, b) => a + b, 0);
  const gatewayCloses = Object.fromEntries(Object.entries(s.closes).filter(([k]) => k.startsWith('host closed')));
  const kinds = errorSuiteKinds(s);
  // What the chart draws red: every kind but the lost queries and violations, which have rows of their own.
  const others = Object.entries(kinds.unexpected).filter(([k]) => k !== 'lost' && !k.startsWith('violation: '));
  const unexpected = others.reduce((a, [, v]) => a + v, 0);
  const reasons = [];
  const othersText = others.map(([k, v]) => `${k} ${num(v)}`).join(', ');
  if (caughtRejects !== inducedRejects) reasons.push(`rejects induced ${num(inducedRejects)}, caught ${num(caughtRejects)}`);
  if (caughtFatal !== inducedFatal) reasons.push(`fatal frames induced ${num(inducedFatal)}, caught ${num(caughtFatal)}`);
  if (violations) reasons.push(`${num(violations)} protocol violations`);
  if (unexpected) reasons.push(`${num(unexpected)} queries failed (${othersText})`);
  // The gateway answers every query it read before a fatal frame; only those sent after it go.
  if (s.lost) reasons.push(`${num(s.lost)} queries lost that the gateway had read`);
  return {
    suite: 'error',
    title: `error: ${given(durationS)} s, fragmented writes (0-${frag} extra splits), invalid frames before ${Math.round(invalidRate * 100)}% of queries`,
    figures: {
      transactions: s.answered, txPerSec: s.txPerSec, induced: {
        reject: inducedRejects, fatal: inducedFatal,
      }, caught: { reject: caughtRejects, fatal: caughtFatal }, gatewayCloses, voidedByFatalFrames: s.voided.queries, lost: s.lost,
    },
    // Expected outcomes first, then what must be zero; every count adds up to the one above it.
    rows: [
      ['transactions', `${num(s.answered)} (${fixed(s.txPerSec)} tx/s)`],
      ['induced errors', `${num(inducedRejects + inducedFatal)} (${num(inducedRejects)} rejects, ${num(inducedFatal)} fatal)`],
      ['expected: rejects caught', `${num(caughtRejects)} of ${num(inducedRejects)}: ${num(s.caught.reject)} answered E_AG_INVALID_MESSAGE, `
        + `${num(s.voided.reject)} sent behind a fatal frame (never read)`],
      ['expected: fatal caught', `${num(caughtFatal)} of ${num(inducedFatal)}: ${num(s.caught.fatal)} connections closed by the gateway `
        + `(${Object.entries(gatewayCloses).map(([k, v]) => `${num(v)} x ${k.replace('host closed after ', '')}`).join(', ') || 'none'}), `
        + `${num(s.voided.fatal)} sent behind another fatal frame (never read)`],
      ['expected: queries voided', `${num(s.voided.queries)} sent behind a fatal frame, which the gateway never reads`],
      ['expected: not sent while reconnecting', `${num(s.unsent || 0)} due while the router reconnected after a fatal frame`],
      ['unexpected: queries lost', num(s.lost)],
      ['unexpected: other failures', others.length === 0 ? '0' : `${num(unexpected)} (${othersText})`],
      ['unexpected: protocol violations', num(violations)],
    ],
    verdict: { pass: reasons.length === 0, reasons },
    ...res,
  };
}

module.exports = { error };
