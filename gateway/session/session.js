'use strict';

// One router connection (side A, side B, or any other): the GED-145 session state machine, with a short handler per
// message type. Invariant: every request read from the router gets exactly one reply, unless the socket itself is gone
// (then its backend calls are aborted and nothing is written). Its helpers get the values and calls they need, not the
// session: the socket (reading, writing, timers, the lingering close) router-link.js; the queries in flight
// session-queries.js (exactly once: inflight.js); those waiting for a slot backlog.js; outcome -> reply reply.js.
// OPEN_REQ and its negotiation are open.js, the channels a session publishes on diagnostics.js, /sessions' view
// summary.js. What a Session needs from its gateway is the class SessionHost (host.js): server.js's Gateway extends it.
//
// One state (session/states.js), and while the socket lives, the step its close has reached:
//
//              OPEN_REQ             CLOSE_REQ                 OPEN_REQ
//   connected ---------> open ------------------> closing ----------> open
//       |                  |                         |
//       +------------------+--- socket gone ---------+------------> closed
//
//   live --drain()--> draining --nothing in flight, input drained--+
//     |                  (still reading and answering)              |
//     +--end()--------------------------------------------------> ending
//                (a fatal frame, a half-close, CLOSE from us,      |  input read and dropped;
//                 an open refused, a host stopping)                |  what was read is answered
//                                                                  v
//              socket gone (any step) <-- router's FIN, linger -- finishing
//                                                                    `last` and our FIN written
//
// "Input drained" is the link's to say (RouterLink.awaitInputDrained): a query the router sent
// just before the last answer may already sit in our socket's buffer, and ending first would skip
// a query that had reached us.

const {
  STATUS, MESSAGE_TYPES: T,
} = require('../../lib/protocol');
const { RouterLink } = require('./router-link');
const { LABEL } = require('../backend/outcome');
const { SessionQueries } = require('./session-queries');
const { Backlog } = require('./backlog');
const { openSession } = require('./open');
const { Replies } = require('./reply');
const { LogThrottle } = require('../log-throttle');
const { reportVerdict } = require('./key-check');
const { SESSION_STATE: S, CLOSE_STEP: STEP } = require('./states');
const { channels, publishQueryStart, publishQuerySettle } = require('./diagnostics');
const { sessionJson, closeSummary } = require('./summary');

let nextSessionId = 1;

class Session {
  /** log: the connection's logger from the gateway's connection log budget (connection-log.js), given when it was accepted. */
  constructor(socket, gateway, log = gateway.connectionLog.accept(socket.remoteAddress)) {
    this.id = nextSessionId++;
    this.socket = socket;
    this.gateway = gateway;
    const { config } = gateway;
    // Per connection, as when it was accepted (a reload applies them to new connections); the
    // deadline, the backend, duplicates and the versions are read per message, so a reload reaches them at once.
    this.limits = config.limits;
    this.log = log;
    this.debug = this.log.isLevelEnabled('debug');
    this.throttle = new LogThrottle();
    this.state = S.CONNECTED;
    this.step = STEP.LIVE; // how far the close has gone, while the socket lives (the drawing above)
    this.peer = `${socket.remoteAddress}:${socket.remotePort}`;
    this.connectedAt = new Date();
    this.lastHeartbeatAt = 0;
    this.tls = socket.encrypted === true; // a TLSSocket
    this.openedAt = null;
    this.connectInfo = undefined;
    this.version = undefined;
    this.encrypted = false;
    this.keyCheck = null; // an encrypted session: whether its fields decrypt (key-check.js)
    this.idleTimeoutMs = 0;
    this.profile = gateway.profile; // the wire numbering (config `protocol`), and its serializer
    this.serialize = gateway.serialize;
    this.reply = new Replies({
      id: this.id, log: this.log, throttle: this.throttle, debug: this.debug, serialize: this.serialize, maxBody: this.limits.maxMessageLength,
      text: () => gateway.config.answers, // read per answer: a reload reaches open sessions
    });
    this.closeWaiters = [];
    this.closeReason = null; // why the connection closes: the first reason given (ours, the link's, the socket's)
    this.drainReason = null; // draining: the reason the session ends with once nothing is in flight
    this.last = undefined; // draining, ending: what is written before our FIN (a FAILURE_EVENT, say)
    this.peerEnded = false; // the router sent FIN (a half-close): end once every request it sent is answered
    this.backlog = new Backlog(this.limits.maxQueuedBytes, { // past limits.maxInFlight, answered in order as slots free
      mayTake: (msg) => msg.typeId !== T.QUERY_REQ || this.inflight.size < this.limits.maxInFlight,
      take: (msg, receivedAt, now) => this.handle(msg, receivedAt, now),
      gone: () => this.state === S.CLOSED,
      afterSlice: () => this.afterBacklogSlice(),
    });
    this.counters = { queries: 0, heartbeats: 0, params: 0, rejects: 0, droppedFields: 0, lost: 0 };
    this.verdictLog = { log, throttle: this.throttle, session: this.id, peer: this.peer, counters: this.counters }; // key-check.js's reportVerdict
    this.openTimer = setTimeout(openTimedOut, this.limits.openTimeoutMs, this);
    this.link = new RouterLink(socket, {
      limits: this.limits, log: this.log, meta: { session: this.id, peer: this.peer }, profile: this.profile,
      onMessage: (msg, size) => this.onMessage(msg, size),
      onProtocolError: (err) => this.onProtocolError(err),
      onPeerEnd: () => this.onPeerEnd(), // half-close: what was sent is answered first
      onInputDrained: () => this.onInputDrained(),
      onFailure: (reason) => this.noteCloseReason(reason),
      onClosed: () => this.onClose(),
      holding: () => this.waiting > 0,
      trace: { limit: config.log.traceFrames, redact: () => this.redact },
    });
    this.queries = new SessionQueries({ // in flight, answered once, counted (session-queries.js)
      id: this.id, log: this.log, debug: this.debug, reply: this.reply, link: this.link, host: gateway,
      redact: () => this.redact, side: () => this.side, afterSettle: () => this.afterSettle(),
      published: { start: (view) => publishQueryStart(this, view), settle: (view, p, outcome, reply) => publishQuerySettle(this, view, p, outcome, reply) },
    });
    this.inflight = this.queries.inflight;
    this.log.info('router connected', { session: this.id, peer: this.peer });
    if (channels.sessionOpen.hasSubscribers) channels.sessionOpen.publish({ gateway, session: this });
  }

  /** The router's side as its OPEN_REQ names it (ConnectInfo), null before one. */
  get side() {
    return this.connectInfo === undefined ? null : this.connectInfo;
  }

  /** The one setter of the state and the close's step (the drawing above): each change is published. */
  setState(to, step = this.step) {
    const [from, fromStep] = [this.state, this.step];
    this.state = to;
    this.step = step;
    if (channels.sessionState.hasSubscribers) channels.sessionState.publish({ gateway: this.gateway, session: this, from, to, fromStep, step });
  }

  /** OPEN_REQ agreed (open.js): encryption set afresh (closed and reopened plain is plain), the side, version and idle timeout. */
  opened(agreed, { keyCheck, cipher }, invokeId) {
    this.clearOpenTimer();
    this.encrypted = keyCheck !== null;
    this.keyCheck = keyCheck;
    this.reply.setCipher(cipher);
    this.link.setCipher(cipher);
    this.openedAt = new Date();
    ({ connectInfo: this.connectInfo, version: this.version, idleTimeoutMs: this.idleTimeoutMs } = agreed);
    this.setState(S.OPEN);
    this.link.setIdleTimeout(this.idleTimeoutMs);
    this.send(this.serialize.openConf(invokeId));
    this.log.sessionOpened();
  }

  /** Requests in the backlog, not dispatched yet. */
  get waiting() {
    return this.backlog.length;
  }

  /** log.redact as it is now: a reload that turns it on covers this session's next line. */
  get redact() {
    return this.gateway.config.log.redact;
  }

  /** Still reading and acting on requests (live or draining). */
  get reading() {
    return this.state !== S.CLOSED && (this.step === STEP.LIVE || this.step === STEP.DRAINING);
  }

  /** The host is stopping and this session has not ended yet (see drain()). */
  get draining() {
    return this.state !== S.CLOSED && this.step === STEP.DRAINING;
  }

  noteCloseReason(reason) {
    if (this.closeReason === null) this.closeReason = reason;
  }

  // ---- requests ----------------------------------------------------------------------------

  /**
   * One message from the reader. A heartbeat is answered at once, whatever waits; a query past
   * limits.maxInFlight, and anything behind a waiting request, joins the backlog (in order).
   */
  onMessage(msg, size) {
    if (!this.reading) return;
    if (this.keyCheck !== null && msg.typeId === T.QUERY_REQ) this.counters.droppedFields += reportVerdict(this.keyCheck.judge(msg), this.verdictLog);
    const receivedAt = this.link.lastRx;
    if (msg.typeId === T.HEARTBEAT_REQ) {
      this.onHeartbeat(msg);
    } else if (this.waiting > 0 || (msg.typeId === T.QUERY_REQ && this.inflight.size >= this.limits.maxInFlight)) {
      if (this.backlog.hold(msg, size, receivedAt)) this.link.pauseInput();
    } else {
      this.handle(msg, receivedAt);
    }
  }

  /** The backlog stopped releasing: read again once it is small enough; with none left, input is done. */
  afterBacklogSlice() {
    if (this.backlog.mayResume) this.link.resumeInput();
    if (this.waiting === 0) this.inputDone();
  }

  /** Every request read has been dispatched: a half-closed router's session can end now. */
  inputDone() {
    if (this.peerEnded && this.link.unreadBytes === 0) this.end('closed by router');
    else if (this.step === STEP.ENDING && this.inflight.size === 0) this.finish();
  }

  /** The router sent FIN: the answer to ours, or a half-close after its last request. */
  onPeerEnd() {
    this.peerEnded = true;
    if (this.step === STEP.FINISHING) this.link.closeWhenFlushed();
    else if (this.waiting === 0) this.end('closed by router');
  }

  /** now: the time, for a request taken from the backlog (it may have waited past its deadline). */
  handle(msg, receivedAt, now) {
    switch (msg.typeId) {
      case T.QUERY_REQ: this.onQuery(msg, receivedAt, now); break;
      case T.HEARTBEAT_REQ: this.onHeartbeat(msg); break;
      case T.OPEN_REQ: openSession(this, msg); break;
      case T.CLOSE_REQ: this.onCloseReq(msg); break;
      case T.PARAM_REQ: this.onParam(msg); break;
      default: break; // the decoder only lets router->host types through
    }
  }

  onHeartbeat(msg) {
    // Answered at once, never queued behind queries (docs/protocol.md, timing).
    this.counters.heartbeats++;
    this.lastHeartbeatAt = Date.now();
    if (channels.heartbeat.hasSubscribers) channels.heartbeat.publish({ gateway: this.gateway, session: this });
    this.send(this.serialize.heartbeatConf(msg.invokeId));
  }

  onCloseReq(msg) {
    if (this.state === S.OPEN) {
      this.setState(S.CLOSING);
      this.gateway.releaseSession(this);
      this.log.info('CLOSE_REQ received; answering once in-flight queries are done', { session: this.id, peer: this.peer, inFlight: this.inflight.size });
    }
    // Never drop the connection for a CLOSE_REQ alone: answer it and let the router close.
    this.closeWaiters.push(msg.invokeId);
    this.settleClose();
  }

  onParam(msg) {
    if (this.state !== S.OPEN) {
      this.failure(msg.invokeId, STATUS.E_AG_SESSION_INACTIVE, 'no open session');
      return;
    }
    this.counters.params++;
    const n = this.throttle.hit('param');
    if (n) this.log.info('PARAM_REQ', { session: this.id, paramId: msg.paramId, paramValue: msg.paramValue, count: n });
    this.send(this.serialize.paramConf(msg.invokeId));
  }

  /**
   * receivedAt: when its bytes arrived (performance.now()); its deadline runs from then. now: given
   * for a query that waited in the backlog, which is answered at once if its deadline has passed.
   */
  onQuery(q, receivedAt, now) {
    if (this.state !== S.OPEN) {
      this.failure(q.invokeId, STATUS.E_AG_SESSION_INACTIVE, 'no open session');
      return;
    }
    this.counters.queries++;
    if (this.keyCheck !== null && this.keyCheck.refuses(q)) {
      // Never answered as a success: a FAILURE_CONF, which the router counts toward its ErrorThreshold.
      const [label, reply] = this.reply.failed(q, LABEL.INVALID_KEY, 'the query\'s fields do not decrypt: the router and this host have different DES keys');
      this.queries.finish(null, q, label, reply);
      return;
    }
    if (q.duplicate && this.gateway.config.duplicates === 'answer-empty') {
      this.queries.finish(null, q, LABEL.DUPLICATE, this.serialize.queryResp({ invokeId: q.invokeId, status: STATUS.E_AG_NO_ERROR }));
      return;
    }
    this.queries.dispatch(q, receivedAt, now);
  }

  // ---- after each reply --------------------------------------------------------------------

  afterSettle() {
    if (this.state === S.CLOSED) return;
    if (this.waiting > 0 && !this.backlog.scheduled) this.backlog.release();
    if (this.closeWaiters.length > 0) this.settleClose();
    if (this.inflight.size === 0 && this.waiting === 0) {
      if (this.step === STEP.ENDING) this.finish();
      else if (this.step === STEP.DRAINING) this.link.awaitInputDrained();
      this.gateway.onSessionIdle(this);
    }
  }

  settleClose() {
    if (this.inflight.size > 0) return;
    const waiters = this.closeWaiters;
    this.closeWaiters = [];
    for (const invokeId of waiters) this.send(this.serialize.closeConf(invokeId));
  }

  failure(invokeId, status, text) {
    this.send(this.reply.failureConf(invokeId, status, text));
  }

  send(buf) {
    this.link.send(buf);
  }

  // ---- errors and closing ------------------------------------------------------------------

  onProtocolError(err) {
    const fatal = err.fatal === true;
    if (channels.protocolError.hasSubscribers) channels.protocolError.publish({ gateway: this.gateway, session: this, code: err.reason, fatal });
    const meta = { session: this.id, peer: this.peer, reason: err.reason };
    if (fatal) {
      // The stream cannot be trusted past this frame, but the queries read before it are intact:
      // they are answered first, then FAILURE_EVENT, then a lingering close.
      this.log.warn(`closing connection: ${err.message}`, { ...meta, inFlight: this.inflight.size });
      this.end(err.reason, this.serialize.failureEvent(STATUS.E_AG_INVALID_MESSAGE, err.message));
      return;
    }
    this.counters.rejects++;
    const n = this.throttle.hit('reject');
    if (n) this.log.warn(`rejected a frame: ${err.message}`, { ...meta, invokeId: err.invokeId, rejects: n });
    if (err.invokeId === undefined) this.send(this.serialize.failureEvent(err.status, err.message));
    else this.failure(err.invokeId, err.status, err.message);
  }

  /**
   * The host is stopping (a shutdown, a rolling restart): go on reading and answering, and end the
   * session once nothing is in flight and the router's input is drained. Stopping input at once
   * would drop the queries the router sends before it sees our FIN; this leaves only those sent
   * in the last round trip. The gateway ends every session anyway when shutdownTimeoutMs runs out.
   */
  drain(reason, last) {
    if (this.state === S.CLOSED || this.step !== STEP.LIVE) return;
    this.setState(this.state, STEP.DRAINING);
    this.drainReason = reason;
    this.last = last;
    if (this.inflight.size === 0 && this.waiting === 0) this.link.awaitInputDrained();
  }

  /** The link has read all the router sent (awaitInputDrained): a draining session with nothing left to answer ends. */
  onInputDrained() {
    if (!this.draining || this.inflight.size > 0 || this.waiting > 0) return; // a query came meanwhile: asked again once answered
    this.end(this.drainReason, this.last);
    this.gateway.onSessionIdle(this);
  }

  /**
   * Graceful close: act on no more input, answer the queries in flight (each is bounded by its
   * deadline), write `last` (a FAILURE_EVENT, say), then the link's lingering close.
   */
  end(reason, last) {
    if (!this.reading) return;
    this.setState(this.state, STEP.ENDING);
    this.last = last;
    this.noteCloseReason(reason);
    this.clearOpenTimer();
    this.link.discardInput();
    // Requests read before this are still answered: those in flight, and those in the backlog.
    if (this.inflight.size === 0 && this.waiting === 0) this.finish();
  }

  /** Every request read is answered: `last`, our FIN, and the link lingers for the router's. */
  finish() {
    if (this.state === S.CLOSED || this.step !== STEP.ENDING) return;
    this.setState(this.state, STEP.FINISHING);
    this.link.finish(this.last, this.peerEnded);
  }

  destroy(reason) {
    if (this.state === S.CLOSED) return;
    this.noteCloseReason(reason);
    this.link.destroy();
  }

  /** No OPEN_REQ within limits.openTimeoutMs: the open timer fired (opened(), end() and onClose() clear it). */
  onOpenTimeout() {
    this.openTimer = null;
    this.log.warn(`no OPEN_REQ within ${this.limits.openTimeoutMs} ms; closing the connection`, { session: this.id, peer: this.peer });
    this.destroy('open timeout');
  }

  clearOpenTimer() {
    if (this.openTimer !== null) clearTimeout(this.openTimer);
    this.openTimer = null;
  }

  onClose() {
    if (this.state === S.CLOSED) return;
    const wasOpen = this.state === S.OPEN;
    this.setState(S.CLOSED);
    this.clearOpenTimer();
    // Queries the router will get no answer to, because it went away: in flight, or waiting.
    const lost = this.queries.abandon(this.backlog.drop());
    this.counters.lost += lost;
    if (wasOpen) this.gateway.releaseSession(this);
    this.gateway.onSessionClosed(this);
    const reason = this.closeReason || 'closed by router';
    this.log.info('router disconnected', closeSummary(this, reason, lost));
    if (channels.sessionClose.hasSubscribers) channels.sessionClose.publish({ gateway: this.gateway, session: this, reason });
  }

  toJSON() {
    return sessionJson(this);
  }
}

const openTimedOut = (session) => session.onOpenTimeout(); // the open timer's handler: no closure per connection

module.exports = { Session };
