'use strict';

// What a shadowed query came to: the live outcome and the candidate's, compared on what the router
// would have received from each (its status, the ERROR text, VAR1..VAR10, ECC scalars, ECC_ARRAY
// elements, CED and CDPD), after the route's mapping and after fitting to the tag and frame limits.
// The fitting is answer/'s: the gateway hands it in (`reply`: {answer(answer) -> fitted or null,
// error(text) -> the ERROR text sent}), as it hands the cache keptAnswer, so the backend imports
// nothing of GED-145's replies. A result is one of RESULT; a `different` one lists its fields.

const { KIND } = require('./outcome');

const RESULT = Object.freeze({
  SAME: 'same',
  DIFFERENT: 'different',
  CANDIDATE_FAILED: 'candidate_failed', // the router would have got E_AG_HOST_ERROR1 from the candidate
  LIVE_FAILED: 'live_failed', // nothing to compare the candidate's answer with
  DROPPED: 'dropped', // not sent: the shadow calls in flight were at their cap
});

/** The comparison's view of an outcome without a reply function: the answer as the backend gave it. */
const AS_GIVEN = Object.freeze({ answer: (a) => a, error: (t) => String(t || '') });

/** What the router would get for an outcome: {status, error, fields: Map(field -> value)}, or null for E_AG_HOST_ERROR1. */
function replyView(outcome, reply) {
  if (outcome.kind === KIND.APP_ERROR) return { status: 'E_AG_HOST_ERROR2', error: reply.error(outcome.text), fields: new Map() };
  if (outcome.kind !== KIND.OK) return null;
  const fitted = reply.answer(outcome.answer);
  if (fitted === null) return null; // even its scalars are over the frame limit: the router gets E_AG_HOST_ERROR1
  const fields = new Map();
  if (fitted.vars) for (const [n, v] of Object.entries(fitted.vars)) fields.set(`vars.${n}`, String(v));
  if (fitted.ecc) for (const [name, v] of Object.entries(fitted.ecc)) fields.set(`ecc.${name}`, String(v));
  if (Array.isArray(fitted.eccArrays)) {
    for (const el of fitted.eccArrays) if (el && typeof el.name === 'string') fields.set(`eccArrays.${el.name}[${el.index}]`, String(el.value));
  }
  if (fitted.ced !== undefined && fitted.ced !== null) fields.set('ced', String(fitted.ced));
  if (fitted.cdpd !== undefined && fitted.cdpd !== null) fields.set('cdpd', String(fitted.cdpd));
  return { status: 'E_AG_NO_ERROR', error: '', fields };
}

/**
 * live, candidate: outcomes (outcome.js); reply: the gateway's fitting (AS_GIVEN without one).
 * -> {result, differences: [{field, live, candidate}]}; a field one side lacks is null on that side.
 */
function compareOutcomes(live, candidate, reply = AS_GIVEN) {
  const l = replyView(live, reply);
  if (l === null) return { result: RESULT.LIVE_FAILED, differences: [] };
  const c = replyView(candidate, reply);
  if (c === null) return { result: RESULT.CANDIDATE_FAILED, differences: [] };
  const differences = [];
  if (l.status !== c.status) differences.push({ field: 'status', live: l.status, candidate: c.status });
  if (l.error !== c.error) differences.push({ field: 'error', live: l.error, candidate: c.error });
  for (const [field, value] of l.fields) {
    const other = c.fields.has(field) ? c.fields.get(field) : null;
    if (other !== value) differences.push({ field, live: value, candidate: other });
  }
  for (const [field, value] of c.fields) if (!l.fields.has(field)) differences.push({ field, live: null, candidate: value });
  return { result: differences.length === 0 ? RESULT.SAME : RESULT.DIFFERENT, differences };
}

module.exports = { RESULT, compareOutcomes };
