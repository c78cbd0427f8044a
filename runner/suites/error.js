'use strict';

// error: a timed run with writes fragmented at random (0-4 extra splits) and invalid frames
// injected; every induced error must be caught, and nothing else may go wrong.

const { measured, progress, errorSuiteKinds } = require('./common');

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
  if (caughtRejects !== inducedRejects) reasons.push(`rejects induced ${inducedRejects}, caught ${caughtRejects}`);
  if (caughtFatal !== inducedFatal) reasons.push(`fatal frames induced ${inducedFatal}, caught ${caughtFatal}`);
  if (violations) reasons.push(`${violations} protocol violations`);
  if (unexpected) reasons.push(`${unexpected} queries failed (${others.map(([k, v]) => `${k} ${v}`).join(', ')})`);
  // The gateway answers every query it read before a fatal frame; only those sent after it go.
  if (s.lost) reasons.push(`${s.lost} queries lost that the gateway had read`);
  return {
    suite: 'error',
    title: `error: ${durationS} s, fragmented writes (0-${frag} extra splits), invalid frames before ${Math.round(invalidRate * 100)}% of queries`,
    figures: {
      transactions: s.answered, txPerSec: s.txPerSec, induced: {
        reject: inducedRejects, fatal: inducedFatal,
      }, caught: { reject: caughtRejects, fatal: caughtFatal }, gatewayCloses, voidedByFatalFrames: s.voided.queries, lost: s.lost,
    },
    // Expected outcomes first, then what must be zero; every count adds up to the one above it.
    rows: [
      ['transactions', `${s.answered.toLocaleString('en-US')} (${Math.round(s.txPerSec).toLocaleString('en-US')} tx/s)`],
      ['induced errors', `${inducedRejects + inducedFatal} (${inducedRejects} rejects, ${inducedFatal} fatal)`],
      ['expected: rejects caught', `${caughtRejects} of ${inducedRejects}: ${s.caught.reject} answered E_AG_INVALID_MESSAGE, `
        + `${s.voided.reject} sent behind a fatal frame (never read)`],
      ['expected: fatal caught', `${caughtFatal} of ${inducedFatal}: ${s.caught.fatal} connections closed by the gateway `
        + `(${Object.entries(gatewayCloses).map(([k, v]) => `${v} x ${k.replace('host closed after ', '')}`).join(', ') || 'none'}), `
        + `${s.voided.fatal} sent behind another fatal frame (never read)`],
      ['expected: queries voided', `${s.voided.queries} sent behind a fatal frame, which the gateway never reads`],
      ['expected: not sent while reconnecting', `${s.unsent || 0} due while the router reconnected after a fatal frame`],
      ['unexpected: queries lost', String(s.lost)],
      ['unexpected: other failures', others.length === 0 ? '0' : `${unexpected} (${others.map(([k, v]) => `${k} ${v}`).join(', ')})`],
      ['unexpected: protocol violations', String(violations)],
    ],
    verdict: { pass: reasons.length === 0, reasons },
    ...res,
  };
}

module.exports = { error };
