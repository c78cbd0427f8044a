'use strict';

// What a query looks like in a log line. With log.redact, caller data (CLID, CED, CDPD, DN and
// every variable value) is replaced, so the logs can leave the call center. Absent fields are left
// out rather than printed as undefined.

const { CALLER_FIELDS } = require('../../lib/query-fields');

const HIDDEN = '[redacted]';

function hideValues(o) {
  return Object.fromEntries(Object.keys(o).map((k) => [k, HIDDEN]));
}

/** The loggable fields of a QUERY_REQ for session `session`. */
function describeQuery(q, session, redact) {
  const out = { session, invokeId: q.invokeId };
  if (q.subtype !== undefined) out.subtype = q.subtype;
  if (q.duplicate) out.duplicate = true;
  if (q.noScriptReply) out.noScriptReply = true;
  for (const k of CALLER_FIELDS) if (q[k] !== undefined) out[k] = redact ? HIDDEN : q[k];
  if (q.routingClient !== undefined) out.routingClient = q.routingClient;
  if (q.vars !== undefined) out.vars = redact ? hideValues(q.vars) : q.vars;
  if (q.ecc !== undefined) out.ecc = redact ? hideValues(q.ecc) : q.ecc;
  if (q.eccArrays !== undefined) {
    out.eccArrays = redact ? q.eccArrays.map((e) => ({ name: e.name, index: e.index, value: HIDDEN })) : q.eccArrays;
  }
  return out;
}

module.exports = { describeQuery };
