'use strict';

// One router connection (side A, side B, or any other): the GED-145 session state machine.
// States: connected -> open (after OPEN_REQ) -> closing (after CLOSE_REQ) -> closed.
// The close is one state machine, here (`phase`); the link only carries it out (router-link.js):
//   live       reading and answering
//   draining   the host is stopping: still reading and answering; ends once nothing is in flight
//              and one more round of input has been read (endDrainedSoon)
//   ending     we decided to close: input is read and dropped, what was read is still answered
//   finishing  every request read is answered: `last` and our FIN are written, the link lingers
//   closed     the socket is gone
// Invariant: every request read from the router gets exactly one reply, unless the socket itself
// is gone (then its backend calls are aborted and nothing is written). The socket side (reading,
// writing, timers, the lingering close) is in router-link.js, the bookkeeping of queries in
// flight in inflight.js, the OPEN negotiation in open.js, outcome -> reply (and its log events)
// in reply.js, what a log line shows of a query in redact.js. What is left is the state machine
// with a short handler per message type, the backlog past limits.maxInFlight, and the close.
//
// What a Session needs from its gateway is the class SessionHost (host.js): server.js's Gateway
// extends it, and so do the tests' doubles.

const { performance } = require('node:perf_hooks');
const {
  STATUS, MESSAGE_TYPES: T, des,
} = require('../../lib/protocol');
const { RouterLink, SLICE_FRAMES } = require('./router-link');
const { LABEL, isAnswered } = require('../backend/outcome');
const { InFlight } = require('./inflight');
const { negotiateOpen } = require('./open');
const { Replies } = require('./reply');
const { describeQuery } = require('./redact');
const { LogThrottle } = require('../../lib/log-throttle');
const { KeyCheck } = require('./key-check');
const { SESSION_STATE: S } = require('./states');
const {
  channels, QueryView, labelsOf, statusOfLabel,
} = require('./diagnostics');

let nextSessionId = 1;
const LIVE = 'live';
const DRAINING = 'draining';
const ENDING = 'ending';
const FINISHING = 'finishing';
const CLOSED = 'closed';
/** Answers at their deadline are written in groups of this many when hundreds are due at once. */
const EXPIRED_WRITE = 64;
/** A session that stopped reading (held requests past limits.maxQueuedBytes) reads again at this fraction of it. */
const RESUME_FRACTION = 0.5;
/** Messages that change how the frames after them are read (state, cipher): decoding waits for them. */
const BARRIERS = new Set([T.OPEN_REQ, T.CLOSE_REQ]);

/**
 * OPEN_REQ.IdleTimeout is used as given within this range; 0 or a value outside it (0xFFFFFFFF
 * would overflow setTimeout into a 1 ms spin) gets limits.defaultIdleTimeoutMs (docs/configuration.md).
 */

class Session {
  /** log: the connection's logger from the gateway's connection log budget (connection-log.js), given when it was accepted. */
  constructor(socket, gateway, log = gateway.connectionLog.accept(socket.remoteAddress)) {
    this.id = nextSessionId++;
    this.socket = socket;
    this.gateway = gateway;
    const { config } = gateway;
    // Per connection, as when it was accepted (a reload applies them to new connections); the
    // deadline, the resolver, duplicates and the versions are read per message, so a reload reaches them at once.
    this.limits = config.limits;
    this.log = log;
    this.debug = this.log.isLevelEnabled('debug');
    this.throttle = new LogThrottle();

    this.state = S.CONNECTED;
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
    this.inflight = new InFlight({
      onDeadline: (p, lateMs) => this.expire(p, lateMs),
      onOutcome: (p, outcome) => this.complete(p, outcome),
      onLost: (p, outcome) => this.onLost(p, outcome),
    });
    this.profile = gateway.profile; // the wire numbering (config `protocol`), and its serializer
    this.serialize = gateway.serialize;
    this.reply = new Replies({
      id: this.id, log: this.log, throttle: this.throttle, debug: this.debug, serialize: this.serialize, maxBody: this.limits.maxMessageLength,
      text: () => gateway.config.answers, // read per answer: a reload reaches open sessions
    });
    this.closeWaiters = [];
    this.phase = LIVE; // the close's state machine (see the top of this file)
    this.closeReason = null; // why the connection closes: the first reason given (ours, the link's, the socket's)
    this.drainReason = null; // draining: the reason the session ends with once nothing is in flight
    this.last = undefined; // draining, ending: what is written before our FIN (a FAILURE_EVENT, say)
    this.inDrainLoop = false; // drainBacklog is running: a settle inside it does not start it again
    this.peerEnded = false; // the router sent FIN (a half-close): end once every request it sent is answered
    // Requests read while limits.maxInFlight queries are in flight, answered in order as slots
    // free: {msg, size, receivedAt}, from backlogHead on. Heartbeats never wait here.
    this.backlog = [];
    this.backlogHead = 0;
    this.backlogBytes = 0;
    this.barrierHeld = false; // an OPEN_REQ or CLOSE_REQ waits in the backlog: decoding waits too
    this.drainScheduled = false;
    this.drainEndTurns = 0; // draining with nothing in flight: turns of the event loop left before the session ends
    this.expiredCount = 0; // queries answered at their deadline: every EXPIRED_WRITE of them, the link flushes
    this.outcomes = {}; // replies by their `outcome` label (ok, cached, stale, fallback, host_error...): ok and failed are read from it
    this.counters = {
      queries: 0, heartbeats: 0, params: 0, rejects: 0, droppedFields: 0, lost: 0,
    };
    this.openTimer = setTimeout(onOpenTimeout, this.limits.openTimeoutMs, this);
    this.link = new RouterLink(socket, {
      limits: this.limits,
      log: this.log,
      meta: { session: this.id, peer: this.peer },
      onMessage: (msg, size) => this.onMessage(msg, size),
      onProtocolError: (err) => this.onProtocolError(err),
      onPeerEnd: () => this.onPeerEnd(), // half-close: what was sent is answered first
      onFailure: (reason) => this.noteCloseReason(reason),
      onClosed: () => this.onClose(),
      holding: () => this.waiting > 0,
      trace: { limit: config.log.traceFrames, redact: () => this.redact },
      profile: this.profile,
    });
    this.log.info('router connected', { session: this.id, peer: this.peer });
    if (channels.sessionOpen.hasSubscribers) channels.sessionOpen.publish({ gateway, session: this });
  }

  /** The router's side as its OPEN_REQ names it (ConnectInfo), null before one. */
  get side() {
    return this.connectInfo === undefined ? null : this.connectInfo;
  }

  setState(to) {
    const from = this.state;
    this.state = to;
    if (channels.sessionState.hasSubscribers) {
      channels.sessionState.publish({
        gateway: this.gateway, session: this, from, to,
      });
    }
  }

  /** Requests in the backlog, not dispatched yet. */
  get waiting() {
    return this.backlog.length - this.backlogHead;
  }

  /** log.redact as it is now: a reload that turns it on covers this session's next line. */
  get redact() {
    return this.gateway.config.log.redact;
  }

  /** Still reading and acting on requests (live or draining). */
  get reading() {
    return this.phase === LIVE || this.phase === DRAINING;
  }

  /** The host is stopping and this session has not ended yet (see drain()). */
  get draining() {
    return this.phase === DRAINING;
  }

  noteCloseReason(reason) {
    if (this.closeReason === null) this.closeReason = reason;
  }

  get paused() {
    return this.link.paused;
  }

  // ---- requests ----------------------------------------------------------------------------

  /**
   * One message from the reader. A heartbeat is answered at once, whatever waits; a query past
   * limits.maxInFlight, and anything behind a waiting request, joins the backlog (in order).
   */
  onMessage(msg, size) {
    if (!this.reading) return;
    if (this.keyCheck !== null && msg.typeId === T.QUERY_REQ) this.judgeFields(msg);
    const receivedAt = this.link.lastRx;
    if (msg.typeId === T.HEARTBEAT_REQ) {
      this.onHeartbeat(msg);
    } else if (this.waiting > 0 || (msg.typeId === T.QUERY_REQ && this.inflight.size >= this.limits.maxInFlight)) {
      this.hold(msg, size, receivedAt);
    } else {
      this.handle(msg, receivedAt);
    }
  }

  hold(msg, size, receivedAt) {
    this.backlog.push({ msg, size, receivedAt });
    this.backlogBytes += size;
    if (BARRIERS.has(msg.typeId)) this.barrierHeld = true;
    if (this.barrierHeld || this.backlogBytes > this.limits.maxQueuedBytes) this.link.pauseInput();
  }

  /** Takes requests from the backlog while slots are free, a slice per turn of the event loop. */
  drainBacklog() {
    // A query settled inside the loop below (one that waited past its deadline is answered at
    // once) calls afterSettle, which would start this loop again one level deeper: the loop goes on.
    if (this.inDrainLoop) return;
    this.inDrainLoop = true;
    try {
      this.drainBacklogSlice();
    } finally {
      this.inDrainLoop = false;
    }
  }

  drainBacklogSlice() {
    this.drainScheduled = false;
    const { backlog } = this;
    const now = performance.now(); // for each query taken: has it waited past its deadline?
    let n = 0;
    while (this.waiting > 0 && this.phase !== CLOSED) {
      const item = backlog[this.backlogHead];
      if (item.msg.typeId === T.QUERY_REQ && this.inflight.size >= this.limits.maxInFlight) break;
      if (++n > SLICE_FRAMES) { // a slice per turn of the event loop, as the link reads
        this.drainScheduled = true;
        setImmediate(drainLater, this);
        return;
      }
      backlog[this.backlogHead++] = undefined;
      this.backlogBytes -= item.size;
      if (BARRIERS.has(item.msg.typeId)) this.barrierHeld = false;
      this.handle(item.msg, item.receivedAt, now);
    }
    if (this.waiting === 0) {
      backlog.length = 0;
      this.backlogHead = 0;
    }
    if (this.phase === CLOSED) return;
    if (!this.barrierHeld && this.backlogBytes <= this.limits.maxQueuedBytes * RESUME_FRACTION) this.link.resumeInput();
    if (this.waiting === 0) this.inputDone();
  }

  /** Every request read has been dispatched: a half-closed router's session can end now. */
  inputDone() {
    if (this.peerEnded && this.link.unreadBytes === 0) this.end('closed by router');
    else if (this.phase === ENDING && this.inflight.size === 0) this.finish();
  }

  /** The router sent FIN: the answer to ours, or a half-close after its last request. */
  onPeerEnd() {
    this.peerEnded = true;
    if (this.phase === FINISHING) this.link.closeWhenFlushed();
    else if (this.waiting === 0) this.end('closed by router');
  }

  /** now: the time, for a request taken from the backlog (it may have waited past its deadline). */
  handle(msg, receivedAt, now) {
    switch (msg.typeId) {
      case T.QUERY_REQ: this.onQuery(msg, receivedAt, now); break;
      case T.HEARTBEAT_REQ: this.onHeartbeat(msg); break;
      case T.OPEN_REQ: this.onOpen(msg); break;
      case T.CLOSE_REQ: this.onCloseReq(msg); break;
      case T.PARAM_REQ: this.onParam(msg); break;
      default: break; // the decoder only lets router->host types through
    }
  }

  onOpen(msg) {
    if (this.state === S.OPEN) {
      this.failure(msg.invokeId, STATUS.E_AG_SESSION_ACTIVE, 'session is already open');
      return;
    }
    const agreed = negotiateOpen(msg, {
      config: this.gateway.config,
      limits: this.limits,
      log: this.log,
      throttle: this.throttle,
      meta: { session: this.id, peer: this.peer },
      admit: () => this.gateway.admitSession(this),
    });
    if (agreed.refusal !== undefined) {
      const { status, text, close } = agreed.refusal;
      this.failure(msg.invokeId, status, text);
      if (close !== null) this.end(close);
      return;
    }
    this.clearOpenTimer();
    // Each OPEN sets encryption afresh: an encrypted session closed and reopened plain is plain.
    this.setSessionKey(agreed.sessionKey);
    this.openedAt = new Date();
    this.connectInfo = agreed.connectInfo;
    this.setState(S.OPEN);
    this.version = agreed.version;
    this.idleTimeoutMs = agreed.idleTimeoutMs;
    this.link.setIdleTimeout(this.idleTimeoutMs);
    this.send(this.serialize.openConf(msg.invokeId));
    this.log.sessionOpened();
    this.log.info('session opened', {
      session: this.id,
      peer: this.peer,
      connectInfo: this.connectInfo,
      version: this.version,
      idleTimeoutMs: this.idleTimeoutMs,
      encrypted: this.encrypted,
    });
  }

  /** docs/protocol.md, encryption: with a session key every tag of QUERY_REQ, QUERY_RESP and FAILURE_CONF is DES-encrypted. */
  setSessionKey(sessionKey) {
    this.encrypted = sessionKey !== null;
    this.keyCheck = sessionKey === null ? null : new KeyCheck();
    const cipher = sessionKey === null ? undefined : des.createSessionCipher(sessionKey, this.keyCheck.hooks());
    this.reply.setCipher(cipher);
    this.link.setCipher(cipher);
  }

  /**
   * An encrypted QUERY_REQ, just decoded: a field that did not decrypt is logged (and ignored,
   * docs/protocol.md section 7); a query whose fields show another key is refused in its turn
   * (onQuery), and a router with another key is said once for the session (key-check.js).
   */
  judgeFields(q) {
    const verdict = this.keyCheck.judge(q);
    this.counters.droppedFields += verdict.dropped.length;
    if (verdict.wrongKeyNow) {
      this.log.warn('QUERY_REQ fields do not decrypt with this session\'s key: the router and this host have different DES private keys '
        + '(GED145_DES_KEY or des.keyFile); every query of this session is answered FAILURE_CONF E_AG_INVALID_KEY', {
        session: this.id, peer: this.peer, droppedFields: this.counters.droppedFields,
      });
      return;
    }
    if (verdict.refused) {
      const n = this.throttle.hit('undecryptable-query');
      if (n) this.log.warn('QUERY_REQ refused (E_AG_INVALID_KEY): its SUBTYPE or most of its fields do not decrypt', { session: this.id, count: n });
      return;
    }
    for (const { tag, why } of verdict.dropped) {
      const n = this.throttle.hit('dropped-field');
      if (n) {
        this.log.warn(`ignored an encrypted field: ${why} (do the router and this host share one DES key?)`, { session: this.id, tag, droppedFields: n });
      }
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
      this.finishQuery(null, q, LABEL.INVALID_KEY,
        this.reply.failureConf(q.invokeId, STATUS.E_AG_INVALID_KEY, 'the query\'s fields do not decrypt: the router and this host have different DES keys'));
      return;
    }
    if (q.duplicate && this.gateway.config.duplicates === 'answer-empty') {
      this.finishQuery(null, q, LABEL.DUPLICATE, this.serialize.queryResp({ invokeId: q.invokeId, status: STATUS.E_AG_NO_ERROR }));
      return;
    }
    const { resolver, config } = this.gateway;
    const p = this.inflight.add(q, config.deadlineMs, receivedAt);
    if (channels.queryStart.hasSubscribers) this.publishStart(q, p.start);
    // It waited past its deadline for a slot: answered now (fallback, or the failure), and the
    // backend is not asked a question nobody waits for any more.
    const late = now !== undefined && p.deadlineAt <= now;
    if (this.debug && !late) this.log.debug('query', { ...labelsOf(q), ...describeQuery(q, this.id, this.redact) });
    // group: the backend shares its connections out between sessions by it (engines/undici.js, Origin).
    p.handle = resolver.dispatch(q, p.deadlineAt, this.id, p, !late);
    if (late) this.expire(p);
  }

  // ---- replies -----------------------------------------------------------------------------

  complete(p, outcome) {
    if (!this.inflight.settle(p)) return; // the deadline answered it already, or the router went away
    const [label, reply] = this.reply.forOutcome(p.query, outcome);
    this.finishQuery(p, p.query, label, reply);
    // Many answers in one round of I/O can hold the deadline timer back: what is due is answered
    // here, between them, not after the round.
    this.inflight.expireIfDue();
  }

  expire(p, lateMs = 0) {
    if (!this.inflight.settle(p)) return;
    p.expired = true;
    // The backend's substitute (stale, fallback), or null; the handle aborts its request and drops a late answer.
    const instead = p.handle.atDeadline(lateMs);
    if (instead !== null) {
      const [label, reply] = this.reply.forOutcome(p.query, instead);
      this.finishQuery(p, p.query, label, reply);
    } else {
      this.finishQuery(p, p.query, LABEL.DEADLINE,
        this.reply.failureConf(p.query.invokeId, STATUS.E_AG_HOST_ERROR1, `backend did not answer within ${p.deadlineMs} ms`));
    }
    // Hundreds due at once (a burst's tail) leave in writes of EXPIRED_WRITE, not all after the last.
    if (++this.expiredCount % EXPIRED_WRITE === 0) this.link.flush();
  }

  finishQuery(p, q, outcome, reply) {
    // First: the books can wait, the router cannot. An answer at the deadline leaves this tick.
    this.link.send(reply, this.inflight.size > 0, p !== null && p.expired);
    this.outcomes[outcome] = (this.outcomes[outcome] || 0) + 1;
    if (channels.querySettle.hasSubscribers) this.publishSettle(q, p, outcome);
    if (p !== null) this.afterSettle();
  }

  /** ged145:query:start: the query's view, kept on the message for its log lines and the backend's (q.view). */
  publishStart(q, receivedAt) {
    q.view = new QueryView(q, this.side, receivedAt);
    channels.queryStart.publish({ gateway: this.gateway, session: this, query: q.view });
  }

  /** ged145:query:settle; p is null for a query answered without going in flight (a duplicate, a wrong key) or lost in the backlog. */
  publishSettle(q, p, outcome) {
    const now = performance.now();
    if (q.view === undefined) q.view = new QueryView(q, this.side, p === null ? now : p.start);
    channels.querySettle.publish({
      gateway: this.gateway,
      session: this,
      query: q.view,
      outcome,
      status: statusOfLabel(outcome),
      ms: p === null ? 0 : now - p.start,
      late: p !== null && (p.expired || now >= p.deadlineAt),
    });
  }

  afterSettle() {
    if (this.phase === CLOSED) return;
    if (this.waiting > 0 && !this.drainScheduled) this.drainBacklog();
    if (this.closeWaiters.length > 0) this.settleClose();
    if (this.inflight.size === 0 && this.waiting === 0) {
      if (this.phase === ENDING) this.finish();
      else if (this.phase === DRAINING) this.endDrainedSoon();
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
    if (channels.protocolError.hasSubscribers) {
      channels.protocolError.publish({
        gateway: this.gateway, session: this, code: err.reason, fatal: err.fatal === true,
      });
    }
    if (err.fatal) {
      // The stream cannot be trusted past this frame, but the queries read before it are intact:
      // they are answered first, then FAILURE_EVENT, then a lingering close.
      this.log.warn(`closing connection: ${err.message}`, { session: this.id, peer: this.peer, reason: err.reason, inFlight: this.inflight.size });
      this.end(err.reason, this.serialize.failureEvent(STATUS.E_AG_INVALID_MESSAGE, err.message));
      return;
    }
    this.counters.rejects++;
    const n = this.throttle.hit('reject');
    if (n) {
      this.log.warn(`rejected a frame: ${err.message}`, {
        session: this.id, peer: this.peer, reason: err.reason, invokeId: err.invokeId, rejects: n,
      });
    }
    if (err.invokeId === undefined) this.send(this.serialize.failureEvent(err.status, err.message));
    else this.failure(err.invokeId, err.status, err.message);
  }

  /**
   * The host is stopping (a shutdown, a rolling restart): go on reading and answering, and end the
   * session at the first moment nothing is in flight. Stopping input at once would drop the
   * queries the router sends before it sees our FIN; this leaves only those sent in the last
   * round trip. The gateway ends every session anyway when shutdownTimeoutMs runs out.
   */
  drain(reason, last) {
    if (this.phase !== LIVE) return;
    this.phase = DRAINING;
    this.drainReason = reason;
    this.last = last;
    if (this.inflight.size === 0 && this.waiting === 0) this.endDrainedSoon();
  }

  /**
   * Nothing in flight while draining: end two check phases from now, not at once. A query of the
   * router's may be in our socket's buffer already, handed to us in the same round of I/O as the
   * answer (or the shutdown signal) that got us here, or arrived while that round ran. Ending now
   * would skip it as input after our close: a query lost that had reached us. The poll between
   * the two check phases reads it; it is then in flight, and its answer brings us back here.
   */
  endDrainedSoon() {
    const scheduled = this.drainEndTurns > 0;
    this.drainEndTurns = 2; // counted again from a query answered meanwhile
    if (!scheduled) setImmediate(endDrained, this);
  }

  /**
   * Graceful close: act on no more input, answer the queries in flight (each is bounded by its
   * deadline), write `last` (a FAILURE_EVENT, say), then the link's lingering close.
   */
  end(reason, last) {
    if (!this.reading) return;
    this.phase = ENDING;
    this.last = last;
    this.noteCloseReason(reason);
    this.clearOpenTimer();
    this.link.discardInput();
    // Requests read before this are still answered: those in flight, and those in the backlog.
    if (this.inflight.size === 0 && this.waiting === 0) this.finish();
  }

  /** Every request read is answered: `last`, our FIN, and the link lingers for the router's. */
  finish() {
    if (this.phase !== ENDING) return;
    this.phase = FINISHING;
    this.link.finish(this.last, this.peerEnded);
  }

  destroy(reason) {
    if (this.phase === CLOSED) return;
    this.noteCloseReason(reason);
    this.link.destroy();
  }

  clearOpenTimer() {
    if (this.openTimer !== null) clearTimeout(this.openTimer);
    this.openTimer = null;
  }

  onClose() {
    if (this.phase === CLOSED) return;
    const wasOpen = this.state === S.OPEN;
    this.phase = CLOSED;
    this.setState(S.CLOSED);
    this.clearOpenTimer();
    // Queries the router will get no answer to, because it went away: in flight, or waiting.
    let lost = this.inflight.size;
    this.inflight.abortAll(LABEL.LOST);
    for (let i = this.backlogHead; i < this.backlog.length; i++) {
      const { msg, receivedAt } = this.backlog[i];
      if (msg.typeId !== T.QUERY_REQ) continue;
      lost++;
      if (channels.queryStart.hasSubscribers) this.publishStart(msg, receivedAt);
      if (channels.querySettle.hasSubscribers) this.publishSettle(msg, null, LABEL.LOST);
    }
    this.backlog = [];
    this.backlogHead = 0;
    this.counters.lost += lost;
    if (wasOpen) this.gateway.releaseSession(this);
    this.gateway.onSessionClosed(this);
    this.log.info('router disconnected', {
      session: this.id,
      peer: this.peer,
      reason: this.closeReason || 'closed by router',
      abandonedQueries: lost,
      queriesAfterClose: this.link.queriesAfterClose,
      unreadBytes: this.link.unreadBytes,
      ...this.tally(),
      outcomes: { ...this.outcomes, ...(lost > 0 ? { [LABEL.LOST]: lost } : {}) },
    });
    if (channels.sessionClose.hasSubscribers) {
      channels.sessionClose.publish({ gateway: this.gateway, session: this, reason: this.closeReason || 'closed by router' });
    }
  }

  /** A query in flight the router went away from (InFlight.abortAll): counted, never answered. */
  onLost(p, outcome) {
    if (channels.querySettle.hasSubscribers) this.publishSettle(p.query, p, outcome);
  }

  // ---- views -------------------------------------------------------------------------------

  toJSON() {
    return {
      id: this.id,
      peer: this.peer,
      state: this.state,
      connectInfo: this.connectInfo,
      version: this.version,
      encrypted: this.encrypted,
      tls: this.tls,
      connectedAt: this.connectedAt.toISOString(),
      lastHeartbeatAt: this.lastHeartbeatAt === 0 ? null : new Date(this.lastHeartbeatAt).toISOString(),
      openedAt: this.openedAt && this.openedAt.toISOString(),
      idleTimeoutMs: this.idleTimeoutMs,
      inFlight: this.inflight.size,
      waiting: this.waiting,
      paused: this.link.paused,
      counters: this.tally(),
      outcomes: { ...this.outcomes },
    };
  }

  /**
   * The counters, with the replies added up from the outcomes: answered (ok), the backend's own
   * "no" (appError: an unknown caller, a 404 the routing script expects; an answer it chose, not a
   * failure of ours), and failed.
   */
  tally() {
    let ok = 0;
    let appError = 0;
    let failed = 0;
    for (const [label, n] of Object.entries(this.outcomes)) {
      if (isAnswered(label)) ok += n;
      else if (label === LABEL.APP_ERROR) appError += n;
      else failed += n;
    }
    const { queries, ...rest } = this.counters;
    // appError after failed: log parsers written for "queries= ok= failed=" keep working.
    return {
      queries, ok, failed, appError, ...rest,
    };
  }
}

function drainLater(session) {
  session.drainBacklog();
}

function endDrained(session) {
  if (session.phase !== DRAINING || session.inflight.size > 0 || session.waiting > 0) {
    session.drainEndTurns = 0;
    return;
  }
  // Frames read from the socket and held for the next slice are input too: wait for them first.
  if (session.link.betweenSlices || --session.drainEndTurns > 0) {
    setImmediate(endDrained, session);
    return;
  }
  session.end(session.drainReason, session.last);
  session.gateway.onSessionIdle(session);
}

function onOpenTimeout(session) {
  session.openTimer = null;
  if (!session.reading || session.state !== S.CONNECTED) return;
  session.log.warn(`no OPEN_REQ within ${session.limits.openTimeoutMs} ms; closing the connection`, { session: session.id, peer: session.peer });
  session.destroy('open timeout');
}

module.exports = { Session };
