'use strict';

// Runs the case table against one target: each case on fresh connections with its own timeout,
// skipped with the reason when it needs what the run did not declare; results in the shape the
// console, --json and the report all read.

const { decodeFrame, DIRECTION } = require('../../lib/protocol');
const { messageLine } = require('../../lib/message-line');
const { CASES, NEEDS } = require('./cases');
const { CaseContext, CaseFailure, CaseSkipped } = require('./context');
const { Peer } = require('./peer');

const DEFAULT_CASE_TIMEOUT_MS = 6000;

/** 'ged145/framing/*,*heartbeat*' -> a test of a case id. */
function caseFilter(globs) {
  if (!globs) return () => true;
  const res = globs.split(',').map((g) => g.trim()).filter(Boolean)
    .map((g) => new RegExp(`^${g.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`));
  return (id) => res.some((re) => re.test(id));
}

/** The cases a run selects, in table order. */
function selectCases(globs) {
  const wanted = caseFilter(globs);
  return CASES.filter((c) => wanted(c.id));
}

/** Can the target be reached at all? null, or why not (exit 2). */
async function unreachable(target, connectTimeoutMs) {
  try {
    const peer = await Peer.connect(target, { connectTimeoutMs });
    peer.close();
    return null;
  } catch (err) {
    return err.code || err.message;
  }
}

/** The frames a case exchanged, each connection's as lines decoded by the project's decoder. */
function framesOf(ctx) {
  return ctx.peers.map((p) => ({
    connection: p.name,
    more: p.framesSeen - p.frames.length,
    frames: p.frames.map((f) => ({ at: f.at, dir: f.dir === 'out' ? 'router->host' : 'host->router', text: frameText(f) })),
  }));
}

function frameText(f) {
  if (f.message) return messageLine(f.message);
  if (f.error) return `! ${f.error}`;
  try {
    return messageLine(decodeFrame(f.bytes, { direction: DIRECTION.ROUTER_TO_HOST }));
  } catch (err) {
    return `! ${err.reason || 'error'}: ${err.message} (${f.bytes.subarray(0, 32).toString('hex')}${f.bytes.length > 32 ? '...' : ''})`;
  }
}

/** One case: {result, observed, durationMs, frames, measured}. */
async function runCase(c, options) {
  const started = Date.now();
  const base = {
    id: c.id, level: c.level, title: c.title, section: c.section, requirement: c.requirement, expected: c.expected,
  };
  if (c.needs && !options.declared[c.needs]) {
    return { ...base, result: 'skipped', observed: `not run: needs ${NEEDS[c.needs]}`, durationMs: 0 };
  }
  const ctx = new CaseContext(options);
  const limit = c.timeoutMs || DEFAULT_CASE_TIMEOUT_MS;
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ failed: `the case did not finish within ${limit} ms` }), limit);
  });
  let outcome;
  try {
    outcome = await Promise.race([c.run(ctx).then((observed) => ({ observed })), timeout]);
  } catch (err) {
    if (err instanceof CaseSkipped) outcome = { skipped: err.message };
    else if (err instanceof CaseFailure) outcome = { failed: err.observed };
    else outcome = { failed: `the kit failed: ${err.stack || err}` };
  } finally {
    clearTimeout(timer);
    ctx.closeAll();
  }
  const durationMs = Date.now() - started;
  if (outcome.skipped) return { ...base, result: 'skipped', observed: outcome.skipped, durationMs };
  if (outcome.failed !== undefined && c.level === 'INFO') { // measured, never failed: what stopped the measure is the figure
    return { ...base, result: 'info', observed: `not measured: ${outcome.failed}`, durationMs };
  }
  if (outcome.failed !== undefined) {
    return {
      ...base, result: c.level === 'MUST' ? 'fail' : 'non-strict', observed: outcome.failed, durationMs, frames: framesOf(ctx),
    };
  }
  const result = c.level === 'INFO' ? 'info' : 'pass';
  return {
    ...base, result, observed: outcome.observed, durationMs, ...(ctx.measured ? { measured: ctx.measured } : {}),
  };
}

/** passed / failed / skipped as the summary line counts them: a non-strict result fails the run only with --strict. */
function countResults(results, strict) {
  const counts = {
    passed: 0, failed: 0, skipped: 0, nonStrict: 0, info: 0,
  };
  for (const r of results) {
    if (r.result === 'skipped') counts.skipped++;
    else if (r.result === 'fail' || (r.result === 'non-strict' && strict)) counts.failed++;
    else counts.passed++;
    if (r.result === 'non-strict') counts.nonStrict++;
    if (r.result === 'info') counts.info++;
  }
  return counts;
}

/**
 * Runs the selected cases one after another. options: {target, subtype, slowSubtype,
 * failingSubtype, desKey, version, strict, cases (globs), connectTimeoutMs, onResult(result)}.
 * Resolves with {target, date, strict, results, counts, exitCode} (exitCode 2: unreachable).
 */
async function runSuite(options) {
  const date = new Date().toISOString();
  const target = `${options.target.host}:${options.target.port}`;
  const why = await unreachable(options.target, options.connectTimeoutMs);
  if (why !== null) return { target, date, unreachable: why, results: [], exitCode: 2 };
  const declared = {
    slowSubtype: Boolean(options.slowSubtype),
    failingSubtype: Boolean(options.failingSubtype),
    desKey: Boolean(options.desKey),
    tls: Boolean(options.target.tls),
  };
  const results = [];
  for (const c of selectCases(options.cases)) {
    const r = await runCase(c, { ...options, declared });
    results.push(r);
    if (options.onResult) options.onResult(r);
  }
  const counts = countResults(results, options.strict);
  return {
    target, date, strict: Boolean(options.strict), tls: declared.tls, results, counts, exitCode: counts.failed > 0 ? 1 : 0,
  };
}

module.exports = {
  runSuite, runCase, selectCases, caseFilter, countResults, DEFAULT_CASE_TIMEOUT_MS,
};
