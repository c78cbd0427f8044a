'use strict';

// The channels the listener and the sessions publish on (docs/diagnostics.md lists them, with each
// message's fields), as undici's lib/core/diagnostics.js: the core names what happens, metrics, the
// status history and traces subscribe from ops/. Every publisher checks `hasSubscribers` first, so
// a channel nobody listens to costs one property read and builds no message.

const dc = require('node:diagnostics_channel');
const { performance } = require('node:perf_hooks');
const { FAILURE_STATUS } = require('../backend/outcome');

const channels = Object.freeze({
  sessionOpen: dc.channel('ged145:session:open'),
  sessionState: dc.channel('ged145:session:state'),
  sessionClose: dc.channel('ged145:session:close'),
  heartbeat: dc.channel('ged145:session:heartbeat'),
  protocolError: dc.channel('ged145:session:protocol-error'),
  queryStart: dc.channel('ged145:query:start'),
  querySettle: dc.channel('ged145:query:settle'),
  connectionRefused: dc.channel('ged145:connection:refused'),
});

/**
 * A query as subscribers see it (ged145:query:start and :settle), made once, when the first channel
 * that has subscribers needs it, and kept by the query's PendingQuery (inflight.js). fields: the
 * decoded QUERY_REQ (lib/protocol messages.js QueryReq: ced, clid, dn, cdpd, vars, ecc...), caller
 * data a subscriber reads only by choice, and the `query` the backend's channels give for it;
 * labels: a subscriber MAY add to it (a trace_id, say): every log line of this query carries them.
 */
class QueryView {
  constructor(q, side, receivedAt) {
    this.invokeId = q.invokeId;
    this.subtype = q.subtype;
    this.side = side;
    this.receivedAt = receivedAt;
    this.fields = q;
    this.labels = {};
  }
}

const NO_LABELS = Object.freeze({});
/** The labels subscribers gave a query through its view, for its log lines (none when no view was made). */
const labelsOf = (view) => (view === null ? NO_LABELS : view.labels);

/** The FAILURE_CONF status name an outcome label was answered with (backend/outcome.js), null for a QUERY_RESP or no reply. */
const statusOfLabel = (label) => FAILURE_STATUS[label] || null;

/** ged145:query:start, under hasSubscribers: the query's view (QueryView), as its session publishes it. */
function publishQueryStart(session, view) {
  channels.queryStart.publish({ gateway: session.gateway, session, query: view });
}

/**
 * ged145:query:settle, under hasSubscribers. p: the query's PendingQuery (inflight.js), or null
 * for one answered without going in flight (a duplicate, a wrong key) or lost in the backlog;
 * reply: the frame written to the router (null when none was).
 */
function publishQuerySettle(session, view, p, outcome, reply) {
  const now = performance.now();
  channels.querySettle.publish({
    gateway: session.gateway,
    session,
    query: view,
    outcome,
    status: statusOfLabel(outcome),
    ms: p === null ? 0 : now - p.start,
    late: p !== null && (p.expired || now >= p.deadlineAt),
    reply,
  });
}

module.exports = {
  channels, QueryView, labelsOf, publishQueryStart, publishQuerySettle,
};
