'use strict';

// What a Session needs of its gateway, as a class: server.js's Gateway extends it, and so do the
// tests' doubles, so that the two cannot drift apart. Its fields are read per message where that
// matters (config, backend), so a reload (SIGHUP) reaches a running session's next query.
//
//   config            the validated config (limits, deadlineMs, protocol.versions, duplicates, des, log)
//   log               a winston logger
//   backend           what queries are dispatched to: dispatch(query, deadlineAt, group, handler, send) -> a handle (backend/handle.js)
//   profile, serialize the wire numbering (config `protocol`) and its serializer
//   connectionLog     the process-wide log budget for what any peer can cause (connection-log.js)

const { ConnectionLog } = require('./connection-log');

class SessionHost {
  constructor({
    config, log, backend = null, profile, serialize,
  }) {
    this.config = config;
    this.log = log;
    this.backend = backend;
    this.profile = profile;
    this.serialize = serialize;
    this.connectionLog = new ConnectionLog(log);
  }

  /** At OPEN_REQ: null, or the reason the session may not open. Admitting counts the session until releaseSession(). */
  admitSession(_session) {
    return null;
  }

  /** An admitted session ends (CLOSE_REQ, or its connection closed while open). */
  releaseSession(_session) {}

  /** The session has no query in flight any more. */
  onSessionIdle(_session) {}

  /** The connection closed: the session is finished. */
  onSessionClosed(_session) {}
}

module.exports = { SessionHost };
