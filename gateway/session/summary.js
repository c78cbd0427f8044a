'use strict';

// What /sessions, the status page and a session's last log line show of it: its view as JSON, its
// counters with the replies added up from its outcome labels, and the fields of its last line.

const { LABEL, isAnswered } = require('../backend/outcome');

/** A session as /sessions shows it. */
function sessionJson(s) {
  return {
    id: s.id,
    peer: s.peer,
    state: s.state,
    connectInfo: s.connectInfo,
    version: s.version,
    encrypted: s.encrypted,
    tls: s.tls,
    connectedAt: s.connectedAt.toISOString(),
    lastHeartbeatAt: s.lastHeartbeatAt === 0 ? null : new Date(s.lastHeartbeatAt).toISOString(),
    openedAt: s.openedAt && s.openedAt.toISOString(),
    idleTimeoutMs: s.idleTimeoutMs,
    inFlight: s.inflight.size,
    waiting: s.waiting,
    paused: s.link.paused,
    counters: sessionTally(s),
    outcomes: { ...s.queries.outcomes },
  };
}

/**
 * The counters, with the replies added up from the outcomes: answered (ok), the backend's own
 * "no" (appError: an unknown caller, a 404 the routing script expects; an answer it chose, not a
 * failure of ours), and failed.
 */
function sessionTally(s) {
  let ok = 0;
  let appError = 0;
  let failed = 0;
  for (const [label, n] of Object.entries(s.queries.outcomes)) {
    if (isAnswered(label)) ok += n;
    else if (label === LABEL.APP_ERROR) appError += n;
    else failed += n;
  }
  const { queries, ...rest } = s.counters;
  // appError after failed: log parsers written for "queries= ok= failed=" keep working.
  return {
    queries, ok, failed, appError, ...rest,
  };
}

/** The fields of a session's last log line, 'router disconnected': lost is the queries the router gets no answer to. */
function closeSummary(s, reason, lost) {
  return {
    session: s.id,
    peer: s.peer,
    reason,
    abandonedQueries: lost,
    queriesAfterClose: s.link.queriesAfterClose,
    unreadBytes: s.link.unreadBytes,
    ...sessionTally(s),
    outcomes: { ...s.queries.outcomes, ...(lost > 0 ? { [LABEL.LOST]: lost } : {}) },
  };
}

module.exports = { sessionJson, closeSummary };
