'use strict';

// Caller data in free text: a handler module's error message ("no customer for CLID 5551234567")
// is the handler's own words, so under log.redact it cannot be left out field by field as a query's
// fields are (gateway/session/redact.js). Every value the router sent in this query (CLID, CED,
// CDPD, DN, variables, ECC values) is replaced where it appears, and so is any run of four or more
// digits, which catches a number the handler reformatted (+1 555-123-4567 keeps no four in a row
// of the original, but each group of four is hidden).

const { CALLER_FIELDS } = require('./query-fields');

const HIDDEN = '[redacted]';
const DIGITS = /\d{4,}/g;

/** The caller values of a query (the backend's JSON form, backend/request.js queryJson), longest first. */
function callerValues(q) {
  const out = [];
  for (const k of CALLER_FIELDS) if (q[k] !== undefined) out.push(String(q[k]));
  for (const o of [q.vars, q.ecc]) if (o !== undefined && o !== null) for (const v of Object.values(o)) out.push(String(v));
  if (Array.isArray(q.eccArrays)) for (const e of q.eccArrays) out.push(String(e.value));
  return out.filter((v) => v.length >= 2).sort((a, b) => b.length - a.length);
}

/** text with q's caller values and every run of 4+ digits replaced by [redacted]. */
function hideCallerData(text, q) {
  let out = String(text);
  for (const v of callerValues(q || {})) out = out.split(v).join(HIDDEN);
  return out.replace(DIGITS, HIDDEN);
}

module.exports = { hideCallerData };
