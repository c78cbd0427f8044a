'use strict';

// Runs the case table against one target: each case on fresh connections with its own timeout,
// skipped with the reason when it needs what the run did not declare; results in the shape the
// console, --json and the report all read.

const { performance } = require('node:perf_hooks');
const { CASES, NEEDS } = require('./cases');
const {
  CaseContext, CaseFailure, CaseSkipped, failure,
} = require('./context');
const { Peer } = require('./peer');
const { judge, watch } = require('./verdict');
const { SOURCES, sourceLine } = require('./sources');

const DEFAULT_CASE_TIMEOUT_MS = 6000;
/** Cases whose connections are watched at once: bounds the connections a host sees from the kit (about two per case). */
const MAX_WATCHING = 4;

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

/** A case's fields as every result carries them. */
function baseOf(c) {
  const source = SOURCES[c.id];
  return {
    id: c.id,
    level: c.level,
    title: c.title,
    section: c.section,
    requirement: c.requirement,
    source: source ? sourceLine(source) : null,
    expected: c.expected,
  };
}

/**
 * The first half of a case: it runs on its own connections (options.onHostClose hears of a
 * connection the host closed), with its own timeout. Resolves with {ctx, outcome, durationMs}.
 */
async function runPhase(c, options) {
  const started = performance.now();
  const ctx = new CaseContext(options);
  const limit = c.timeoutMs || DEFAULT_CASE_TIMEOUT_MS;
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ failed: failure(`the case did not finish within ${limit} ms`, { cause: 'case timeout' }) }), limit);
  });
  let outcome;
  try {
    outcome = await Promise.race([c.run(ctx).then((observed) => ({ observed })), timeout]);
  } catch (err) {
    if (err instanceof CaseSkipped) outcome = { skipped: err.message };
    else if (err instanceof CaseFailure) outcome = { failed: err };
    else outcome = { failed: failure(`the kit failed: ${err.stack || err}`, { cause: 'the kit failed' }) };
  } finally {
    clearTimeout(timer);
  }
  return { ctx, outcome, durationMs: Math.round(performance.now() - started) };
}

/**
 * The second half: the case's connections watched until the host has been quiet for longer than
 * the router's timeouts, then closed and judged as a whole.
 */
async function judgePhase(c, { ctx, outcome, durationMs }, watchOptions) {
  const base = baseOf(c);
  if (outcome.skipped) {
    ctx.closeAll();
    return { ...base, result: 'skipped', observed: outcome.skipped, durationMs };
  }
  await watch(ctx.peers, performance.now(), watchOptions);
  ctx.closeAll();
  const v = judge(outcome.failed, ctx.peers);
  if (c.level === 'INFO') { // measured, never failed: what stopped the measure is the figure
    if (outcome.failed) return { ...base, result: 'info', observed: `not measured: ${v.observed}`, durationMs };
    const also = v.failed ? ` (and ${v.observed})` : '';
    return {
      ...base, result: 'info', observed: `${outcome.observed}${also}`, durationMs, ...(ctx.measured ? { measured: ctx.measured } : {}),
    };
  }
  if (v.failed) {
    return {
      ...base,
      result: c.level === 'MUST' ? 'fail' : 'non-strict',
      cause: v.cause || c.title,
      observed: v.observed,
      ...(v.also.length > 0 ? { also: v.also } : {}),
      durationMs,
      exchange: v.exchange,
    };
  }
  return { ...base, result: 'pass', observed: outcome.observed, durationMs };
}

/** passed / failed / skipped as the summary line counts them: a non-strict result fails the run only with --strict. */
function countResults(results, strict) {
  const counts = {
    passed: 0, failed: 0, skipped: 0, notRun: 0, nonStrict: 0, info: 0,
  };
  for (const r of results) {
    if (r.result === 'skipped') counts.skipped++;
    else if (r.result === 'not-run') counts.notRun++;
    else if (r.result === 'fail' || (r.result === 'non-strict' && strict)) counts.failed++;
    else counts.passed++;
    if (r.result === 'non-strict') counts.nonStrict++;
    if (r.result === 'info') counts.info++;
  }
  return counts;
}

/**
 * Runs the selected cases one after another. Each case's connections are watched to their end
 * while the next cases run (at most MAX_WATCHING cases at once), so the quiet second each needs
 * costs the run about a second, not a second per case. options: {target, subtype, slowSubtype,
 * failingSubtype, desKey, version, strict, cases (globs), connectTimeoutMs, quietMs,
 * onResult(result)}. Resolves with {target, date, strict, results, counts, causes, exitCode}
 * (exitCode 2: unreachable).
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
  const watchOptions = options.quietMs ? { quietMs: options.quietMs } : undefined;
  const results = [];
  let lastHostClose = null; // the case in which the host last closed a connection unasked
  let hostGone = null; // {caseId, code} once the host accepts no more connections
  let emitted = Promise.resolve();
  const watching = new Set();
  const emit = (pending) => {
    emitted = emitted.then(() => pending).then((r) => {
      results.push(r);
      if (options.onResult) options.onResult(r);
    });
  };
  for (const c of selectCases(options.cases)) {
    if (hostGone) {
      emit(notRun(c, hostGone));
      continue;
    }
    if (c.needs && !declared[c.needs]) {
      emit({
        ...baseOf(c), result: 'skipped', observed: `not run: needs ${NEEDS[c.needs]}`, durationMs: 0,
      });
      continue;
    }
    const phase = await runPhase(c, { ...options, declared, onHostClose: () => { lastHostClose = c.id; } });
    const { failed } = phase.outcome;
    if (failed && failed.connectFailed && phase.ctx.peers.length === 0 && await unreachable(options.target, options.connectTimeoutMs) !== null) {
      hostGone = { caseId: lastHostClose || c.id, code: failed.connectFailed };
      emit(notRun(c, hostGone));
      continue;
    }
    const judged = judgePhase(c, phase, watchOptions);
    watching.add(judged);
    judged.finally(() => watching.delete(judged));
    emit(judged);
    while (watching.size >= MAX_WATCHING) await Promise.race(watching);
  }
  await emitted;
  const counts = countResults(results, options.strict);
  return {
    target,
    date,
    strict: Boolean(options.strict),
    tls: declared.tls,
    results,
    counts,
    causes: causesOf(results, options.strict),
    ...(hostGone ? { hostGone } : {}),
    exitCode: counts.failed > 0 || counts.notRun > 0 ? 1 : 0,
  };
}

/** A case after the host stopped accepting connections: not run, and counted apart from failures. */
function notRun(c, { caseId, code }) {
  return {
    ...baseOf(c),
    result: 'not-run',
    observed: `not run: the host closed the connection in ${caseId} and accepts no more connections (${code})`,
    durationMs: 0,
  };
}

/** Failures grouped by their cause, largest group first: [{cause, ids}]. */
function causesOf(results, strict) {
  const groups = new Map();
  for (const r of results) {
    if (!(r.result === 'fail' || (r.result === 'non-strict' && strict))) continue;
    if (!groups.has(r.cause)) groups.set(r.cause, []);
    groups.get(r.cause).push(r.id);
  }
  return [...groups].map(([cause, ids]) => ({ cause, ids })).sort((a, b) => b.ids.length - a.ids.length);
}

module.exports = {
  runSuite, selectCases, caseFilter, countResults, causesOf, DEFAULT_CASE_TIMEOUT_MS,
};
