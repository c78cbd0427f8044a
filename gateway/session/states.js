'use strict';

// A router connection's session state, as /sessions, the status page and ged145_sessions{state}
// name it. Written once, here: ops/metrics.js and the status page's browser code (injected by
// ops/status-page.js) read these, never their own copy.
//
//   connected  the TCP (or TLS) connection is up, no session yet
//   open       OPEN_REQ accepted: queries are answered
//   closing    CLOSE_REQ received: what is in flight is answered, then CLOSE_CONF
//   closed     the socket is gone

const SESSION_STATE = Object.freeze({
  CONNECTED: 'connected', OPEN: 'open', CLOSING: 'closing', CLOSED: 'closed',
});

/** The states a live connection can be in, in their order (a gauge's series, the page's columns). */
const LIVE_STATES = Object.freeze([SESSION_STATE.CONNECTED, SESSION_STATE.OPEN, SESSION_STATE.CLOSING]);

/**
 * How far a connection's close has gone while its socket lives (session.js draws the sequence):
 * live (reading and answering), draining (the host is stopping: still reading and answering, ends
 * once nothing is in flight and the input is drained), ending (input read and dropped, what was
 * read is answered), finishing (`last` and our FIN written, lingering for the router's FIN).
 * Once the socket is gone the state is closed, whatever the step.
 */
const CLOSE_STEP = Object.freeze({
  LIVE: 'live', DRAINING: 'draining', ENDING: 'ending', FINISHING: 'finishing',
});

module.exports = { SESSION_STATE, LIVE_STATES, CLOSE_STEP };
