'use strict';

// One router connection (side A, side B, or any other): the GED-145 session state machine.
// States: connected -> open (after OPEN_REQ) -> closing (after CLOSE_REQ) -> closed.
// Invariant: every request read from the router gets exactly one reply, unless the socket itself
// is gone (then its backend calls are aborted and nothing is written).

const { performance } = require('node:perf_hooks');
const {
  MessageReader, serialize, STATUS, MESSAGE_TYPES: T, MAX_TAG_DATA, des,
} = require('../lib/protocol');
const { fillAnswer } = require('./answer');

let nextSessionId = 1;
const RESUME_FRACTION = 0.5; // a paused socket resumes when in-flight drops to half the cap
const LOGGED_REJECTS = 10; // per session, then one line per 1000

/** One query in flight: its deadline timer and the controller that aborts its HTTP request. */
class PendingQuery {
  constructor(session, query) {
    this.session = session;
    this.query = query;
    this.start = performance.now();
    this.done = false;
    this.controller = new AbortController();
    this.timer = null;
  }
}

function onDeadline(p) {
  p.session.expire(p);
}

// Module-level socket handlers: no closures per connection on the hot path.
function socketOnData(chunk) {
  this.session.onData(chunk);
}
function socketOnClose() {
  this.session.onClose();
}
function socketOnError(err) {
  this.session.onSocketError(err);
}
function uncork(session) {
  session.corked = false;
  if (!session.socket.destroyed) session.socket.uncork();
}

class Session {
  constructor(socket, gateway) {
    this.id = nextSessionId++;
    this.socket = socket;
    this.gateway = gateway;
    const { config } = gateway;
    this.limits = config.limits;
    this.deadlineMs = config.deadlineMs;
    this.answerDuplicatesEmpty = config.duplicates === 'answer-empty';
    this.log = gateway.log;
    this.redact = config.log.redact;
    this.debug = this.log.isLevelEnabled('debug');
    this.metrics = gateway.metrics;
    this.backend = gateway.backend;

    this.state = 'connected';
    this.peer = `${socket.remoteAddress}:${socket.remotePort}`;
    this.connectedAt = new Date();
    this.openedAt = null;
    this.connectInfo = undefined;
    this.version = undefined;
    this.idleTimeoutMs = 0;
    this.pending = new Set();
    this.closeWaiters = [];
    this.paused = false;
    this.corked = false;
    this.closed = false;
    this.closeReason = null;
    this.counters = {
      queries: 0, ok: 0, failed: 0, heartbeats: 0, params: 0, rejects: 0, droppedFields: 0,
    };
    this.encryptField = undefined; // set when an encrypted session opens
    this.tagLimit = MAX_TAG_DATA;

    this.lastRx = performance.now();
    this.partialSince = -1; // when the frame now buffered began to arrive; -1 = none
    this.idleTimer = null;
    this.partialTimer = null;
    this.openTimer = setTimeout(onOpenTimeout, this.limits.openTimeoutMs, this);

    this.reader = new MessageReader({
      from: 'router',
      maxMessageLength: this.limits.maxMessageLength,
      onMessage: (msg) => this.onMessage(msg),
      onError: (err) => this.onProtocolError(err),
    });

    socket.session = this;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    socket.on('data', socketOnData);
    socket.on('close', socketOnClose);
    socket.on('error', socketOnError);
    this.log.info('router connected', { session: this.id, peer: this.peer });
  }

  // ---- input -------------------------------------------------------------------------------

  onData(chunk) {
    this.lastRx = performance.now();
    const framesBefore = this.reader.frames;
    try {
      this.reader.push(chunk);
    } catch (err) {
      // A bug in a handler must cost one connection, never the process.
      this.log.error('internal error while handling router data; closing the connection', { session: this.id, error: err.message });
      this.destroy('internal error');
      return;
    }
    if (this.reader.bufferedBytes > 0) {
      // The frame now buffered started in this chunk if any frame completed in it.
      if (this.partialSince < 0 || this.reader.frames !== framesBefore) this.partialSince = this.lastRx;
      if (this.partialTimer === null && !this.closed) {
        this.partialTimer = setTimeout(onPartialTimeout, this.limits.partialFrameTimeoutMs, this);
      }
    } else {
      this.partialSince = -1;
    }
  }

  onMessage(msg) {
    if (this.closed) return;
    switch (msg.typeId) {
      case T.QUERY_REQ: this.onQuery(msg); break;
      case T.HEARTBEAT_REQ: this.onHeartbeat(msg); break;
      case T.OPEN_REQ: this.onOpen(msg); break;
      case T.CLOSE_REQ: this.onCloseReq(msg); break;
      case T.PARAM_REQ: this.onParam(msg); break;
      default: break; // the decoder only lets router->host types through
    }
  }

  onOpen(msg) {
    if (this.state === 'open') {
      this.failure(msg.invokeId, STATUS.E_AG_SESSION_ACTIVE, 'session is already open');
      return;
    }
    if (!this.gateway.config.versions.includes(msg.version)) {
      this.log.warn('OPEN_REQ refused: version not supported', { session: this.id, peer: this.peer, version: msg.version, supported: this.gateway.config.versions });
      this.failure(msg.invokeId, STATUS.E_AG_INVALID_VERSION, `version ${msg.version} is not supported`);
      return;
    }
    let sessionKey = null;
    if (msg.encryption !== 0) {
      const privateKey = this.gateway.config.desKey;
      if (!privateKey) {
        this.log.warn('OPEN_REQ refused: the router asks for DES encryption and no key is configured (GED145_DES_KEY or des.keyFile)', { session: this.id, peer: this.peer });
        this.failure(msg.invokeId, STATUS.E_AG_INVALID_KEY, 'encryption is not configured on this host');
        this.end('encryption requested without a key');
        return;
      }
      sessionKey = des.openSessionKey(privateKey, msg.sessionKey);
      if (sessionKey === null) {
        this.log.warn('OPEN_REQ refused: SESSION_KEY does not decrypt to two equal halves (the router and the host have different private keys?)', { session: this.id, peer: this.peer });
        this.failure(msg.invokeId, STATUS.E_AG_INVALID_KEY, 'session key does not match');
        this.end('invalid session key');
        return;
      }
    }
    const refusal = this.gateway.admitSession(this);
    if (refusal) {
      this.log.warn(`OPEN_REQ refused: ${refusal}`, { session: this.id, peer: this.peer });
      this.failure(msg.invokeId, STATUS.E_AG_HOST_OFFLINE, refusal);
      this.end(refusal);
      return;
    }
    clearTimeout(this.openTimer);
    this.openTimer = null;
    if (sessionKey !== null) this.startEncryption(sessionKey);
    this.state = 'open';
    this.openedAt = new Date();
    this.connectInfo = msg.config;
    this.version = msg.version;
    this.idleTimeoutMs = msg.idleTimeoutMs > 0 ? msg.idleTimeoutMs : this.limits.defaultIdleTimeoutMs;
    this.armIdle(this.idleTimeoutMs);
    this.send(serialize.openConf(msg.invokeId));
    this.log.info('session opened', {
      session: this.id, peer: this.peer, connectInfo: this.connectInfo, version: this.version, idleTimeoutMs: this.idleTimeoutMs, encrypted: sessionKey !== null,
    });
  }

  /** PROTOCOL.md section 7: from now on every tag of QUERY_REQ, QUERY_RESP and FAILURE_CONF is DES-encrypted with K. */
  startEncryption(sessionKey) {
    this.encryptField = (data) => des.encryptField(sessionKey, data);
    this.tagLimit = des.MAX_ENCRYPTED_FIELD;
    this.reader.crypt = {
      decryptField: (data) => des.decryptField(sessionKey, data),
      onDropped: (tag, why) => {
        this.counters.droppedFields++;
        if (this.counters.droppedFields <= LOGGED_REJECTS || this.counters.droppedFields % 1000 === 0) {
          this.log.warn(`ignored an encrypted field: ${why} (do the router and this host share one DES key?)`, { session: this.id, tag, droppedFields: this.counters.droppedFields });
        }
      },
    };
  }

  /** FAILURE_CONF bytes, encrypted on an encrypted session. */
  failureConf(invokeId, status, text) {
    return serialize.failureConf(invokeId, status, asciiError(text, this.tagLimit), undefined, this.encryptField);
  }

  onHeartbeat(msg) {
    // Answered at once, never queued behind queries (PROTOCOL.md section 6).
    this.counters.heartbeats++;
    this.metrics.heartbeats.inc();
    this.send(serialize.heartbeatConf(msg.invokeId));
  }

  onCloseReq(msg) {
    if (this.state === 'open') {
      this.state = 'closing';
      this.gateway.releaseSession(this);
      this.log.info('CLOSE_REQ received; answering once in-flight queries are done', { session: this.id, peer: this.peer, inFlight: this.pending.size });
    }
    // Never drop the connection for a CLOSE_REQ alone: answer it and let the router close.
    this.closeWaiters.push(msg.invokeId);
    this.settleClose();
  }

  onParam(msg) {
    if (this.state !== 'open') {
      this.failure(msg.invokeId, STATUS.E_AG_SESSION_INACTIVE, 'no open session');
      return;
    }
    this.counters.params++;
    this.log.info('PARAM_REQ', { session: this.id, paramId: msg.paramId, paramValue: msg.paramValue });
    this.send(serialize.paramConf(msg.invokeId));
  }

  onQuery(q) {
    if (this.state !== 'open') {
      this.failure(q.invokeId, STATUS.E_AG_SESSION_INACTIVE, 'no open session');
      return;
    }
    this.counters.queries++;
    if (this.gateway.draining) {
      this.finishQuery(null, q, 'draining', this.failureConf(q.invokeId, STATUS.E_AG_HOST_OFFLINE, 'host is shutting down'));
      return;
    }
    if (q.duplicate && this.answerDuplicatesEmpty) {
      this.finishQuery(null, q, 'duplicate', serialize.queryResp({ invokeId: q.invokeId, status: STATUS.E_AG_NO_ERROR }));
      return;
    }
    const p = new PendingQuery(this, q);
    this.pending.add(p);
    this.metrics.inFlight.inc();
    if (!this.paused && this.pending.size >= this.limits.maxInFlight) {
      this.paused = true;
      this.socket.pause();
    }
    p.timer = setTimeout(onDeadline, this.deadlineMs, p);
    if (this.debug) this.log.debug('query', this.describe(q));
    this.backend.call(q, p.controller.signal).then(
      (outcome) => this.complete(p, outcome),
      (err) => this.complete(p, { kind: 'host-error', reason: 'internal', text: 'internal error', err }),
    );
  }

  // ---- replies -----------------------------------------------------------------------------

  complete(p, outcome) {
    if (p.done) return; // the deadline answered it already, or the router went away
    const q = p.query;
    let reply;
    let label;
    switch (outcome.kind) {
      case 'ok':
        label = 'ok';
        reply = this.queryResp(q, outcome.answer);
        break;
      case 'app-error':
        label = 'app_error';
        reply = this.failureConf(q.invokeId, STATUS.E_AG_HOST_ERROR2, outcome.text);
        break;
      default:
        label = outcome.reason === 'aborted' ? 'aborted' : 'host_error';
        if (outcome.err) this.log.error('internal error while answering a query', { session: this.id, error: outcome.err.message });
        reply = this.failureConf(q.invokeId, STATUS.E_AG_HOST_ERROR1, outcome.text);
        if (this.debug) this.log.debug('backend failed', { session: this.id, invokeId: q.invokeId, reason: outcome.reason });
    }
    this.settle(p);
    this.finishQuery(p, q, label, reply);
  }

  expire(p) {
    if (p.done) return;
    p.timer = null;
    this.settle(p);
    p.controller.abort(); // a late backend answer is dropped
    this.finishQuery(p, p.query, 'deadline',
      this.failureConf(p.query.invokeId, STATUS.E_AG_HOST_ERROR1, `backend did not answer within ${this.deadlineMs} ms`));
  }

  /** Marks a pending query done and takes it out of the books, exactly once. */
  settle(p) {
    p.done = true;
    if (p.timer !== null) clearTimeout(p.timer);
    this.pending.delete(p);
    this.metrics.inFlight.dec();
  }

  queryResp(q, answer) {
    const resp = { invokeId: q.invokeId, status: STATUS.E_AG_NO_ERROR };
    if (q.noScriptReply) return serialize.queryResp(resp); // the script wants no data back
    const notes = fillAnswer(resp, answer, this.tagLimit);
    if (notes.length > 0) this.log.warn('backend answer adjusted to fit GED-145', { session: this.id, invokeId: q.invokeId, subtype: q.subtype, changes: notes });
    try {
      return serialize.queryResp(resp, undefined, this.encryptField);
    } catch (err) {
      this.log.error('backend answer could not be encoded', { session: this.id, invokeId: q.invokeId, error: err.message });
      return this.failureConf(q.invokeId, STATUS.E_AG_HOST_ERROR1, 'answer could not be encoded');
    }
  }

  finishQuery(p, q, outcome, reply) {
    if (outcome === 'ok' || outcome === 'duplicate') this.counters.ok++;
    else this.counters.failed++;
    this.metrics.observeQuery(q.subtype, outcome, p === null ? 0 : (performance.now() - p.start) / 1000);
    this.send(reply);
    if (p !== null) this.afterSettle();
  }

  afterSettle() {
    if (this.paused && this.pending.size <= this.limits.maxInFlight * RESUME_FRACTION && !this.closed) {
      this.paused = false;
      this.socket.resume();
    }
    if (this.closeWaiters.length > 0) this.settleClose();
    if (this.pending.size === 0) this.gateway.onSessionIdle(this);
  }

  settleClose() {
    if (this.pending.size > 0) return;
    const waiters = this.closeWaiters;
    this.closeWaiters = [];
    for (const invokeId of waiters) this.send(serialize.closeConf(invokeId));
  }

  failure(invokeId, status, text) {
    this.send(this.failureConf(invokeId, status, text));
  }

  /** One write per reply; replies finished in the same tick go out in one corked burst. */
  send(buf) {
    const socket = this.socket;
    if (this.closed || socket.destroyed) return;
    if (!this.corked) {
      this.corked = true;
      socket.cork();
      process.nextTick(uncork, this);
    }
    socket.write(buf);
    if (socket.writableLength > this.limits.maxOutboundBytes) {
      this.log.warn('router is not reading its replies; closing the connection', {
        session: this.id, peer: this.peer, bufferedBytes: socket.writableLength, limit: this.limits.maxOutboundBytes,
      });
      this.destroy('outbound buffer limit');
    }
  }

  // ---- errors, timers and closing ----------------------------------------------------------

  onProtocolError(err) {
    this.metrics.protocolErrors.inc({ code: err.code });
    if (err.fatal) {
      this.log.warn(`closing connection: ${err.message}`, { session: this.id, peer: this.peer, code: err.code });
      this.end(err.code, serialize.failureEvent(STATUS.E_AG_INVALID_MESSAGE, err.message));
      return;
    }
    this.counters.rejects++;
    if (this.counters.rejects <= LOGGED_REJECTS || this.counters.rejects % 1000 === 0) {
      this.log.warn(`rejected a frame: ${err.message}`, {
        session: this.id, peer: this.peer, code: err.code, invokeId: err.invokeId, rejects: this.counters.rejects,
      });
    }
    if (err.invokeId === undefined) this.send(serialize.failureEvent(err.status, err.message));
    else this.failure(err.invokeId, err.status, err.message);
  }

  armIdle(ms) {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(onIdleTimeout, ms, this);
  }

  checkIdle() {
    this.idleTimer = null;
    if (this.closed) return;
    const quiet = performance.now() - this.lastRx;
    if (quiet >= this.idleTimeoutMs) {
      this.log.warn(`nothing received for ${this.idleTimeoutMs} ms (IdleTimeout); closing the connection`, { session: this.id, peer: this.peer });
      this.destroy('idle timeout');
    } else {
      this.armIdle(this.idleTimeoutMs - quiet + 1);
    }
  }

  checkPartial() {
    this.partialTimer = null;
    if (this.closed || this.reader.bufferedBytes === 0) return;
    const waited = performance.now() - this.partialSince;
    const limit = this.limits.partialFrameTimeoutMs;
    if (waited >= limit) {
      this.log.warn(`a frame stayed incomplete for ${limit} ms; closing the connection`, { session: this.id, peer: this.peer, bufferedBytes: this.reader.bufferedBytes });
      this.destroy('partial frame timeout');
    } else {
      this.partialTimer = setTimeout(onPartialTimeout, limit - waited + 1, this);
    }
  }

  /** Graceful: flush what is queued (plus an optional last message), then close. */
  end(reason, last) {
    if (this.closed || this.closeReason !== null) return;
    this.closeReason = reason;
    this.socket.pause();
    this.abortPending();
    const socket = this.socket;
    if (this.corked) socket.uncork();
    socket.end(last);
    socket.once('finish', () => socket.destroy());
    setTimeout(() => socket.destroy(), 1000).unref();
  }

  destroy(reason) {
    if (this.closed) return;
    if (this.closeReason === null) this.closeReason = reason;
    this.socket.destroy();
  }

  abortPending() {
    for (const p of this.pending) {
      p.done = true;
      if (p.timer !== null) clearTimeout(p.timer);
      p.controller.abort();
      this.metrics.inFlight.dec();
      this.metrics.observeQuery(p.query.subtype, 'lost_router_gone', (performance.now() - p.start) / 1000);
    }
    this.pending.clear();
  }

  onSocketError(err) {
    // ECONNRESET and friends: the router went away. 'close' follows and does the cleanup.
    if (this.closeReason === null) this.closeReason = err.code || err.message;
  }

  onClose() {
    if (this.closed) return;
    const wasOpen = this.state === 'open';
    this.closed = true;
    this.state = 'closed';
    clearTimeout(this.openTimer);
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    if (this.partialTimer !== null) clearTimeout(this.partialTimer);
    const lost = this.pending.size;
    this.abortPending();
    if (wasOpen) this.gateway.releaseSession(this);
    this.gateway.onSessionClosed(this);
    this.log.info('router disconnected', {
      session: this.id, peer: this.peer, reason: this.closeReason || 'closed by router', abandonedQueries: lost, ...this.counters,
    });
  }

  // ---- views -------------------------------------------------------------------------------

  describe(q) {
    const r = this.redact;
    const hide = (v) => (v === undefined ? undefined : r ? '[redacted]' : v);
    const hideAll = (o) => (o === undefined || !r ? o : Object.fromEntries(Object.keys(o).map((k) => [k, '[redacted]'])));
    return {
      session: this.id,
      invokeId: q.invokeId,
      subtype: q.subtype,
      duplicate: q.duplicate,
      noScriptReply: q.noScriptReply,
      clid: hide(q.clid),
      ced: hide(q.ced),
      cdpd: hide(q.cdpd),
      dn: q.dn,
      vars: hideAll(q.vars),
      ecc: hideAll(q.ecc),
      eccArrays: q.eccArrays === undefined || !r ? q.eccArrays : q.eccArrays.map((e) => ({ name: e.name, index: e.index, value: '[redacted]' })),
    };
  }

  toJSON() {
    return {
      id: this.id,
      peer: this.peer,
      state: this.state,
      connectInfo: this.connectInfo,
      version: this.version,
      connectedAt: this.connectedAt.toISOString(),
      openedAt: this.openedAt && this.openedAt.toISOString(),
      idleTimeoutMs: this.idleTimeoutMs,
      inFlight: this.pending.size,
      paused: this.paused,
      counters: { ...this.counters },
    };
  }
}

function onOpenTimeout(session) {
  if (session.closed || session.state !== 'connected') return;
  session.log.warn(`no OPEN_REQ within ${session.limits.openTimeoutMs} ms; closing the connection`, { session: session.id, peer: session.peer });
  session.destroy('open timeout');
}
function onIdleTimeout(session) {
  session.checkIdle();
}
function onPartialTimeout(session) {
  session.checkPartial();
}

/** ERROR tag text: ASCII, at most `limit` bytes. */
function asciiError(text, limit = MAX_TAG_DATA) {
  const s = String(text || '').replace(/[^\x20-\x7e]/g, '?');
  return s.length > limit ? s.slice(0, limit) : s;
}

module.exports = { Session };
