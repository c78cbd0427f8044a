'use strict';

// One router side's connection to a host: the socket and its reconnects (SessionRetry), OPEN_REQ
// with version fallback and DES, heartbeats after an idle interval, request timeouts counted as
// missed heartbeats, HeartbeatLimit and ErrorThreshold, CLOSE_REQ on shutdown. Replies are matched
// by InvokeID in any order in invoke-book.js, which also keeps the injected-error accounting;
// what is written goes through the FrameWriter (injector.js), which fragments, delays or
// coalesces it and hands each piece to the pcap capture; heartbeats are in heartbeats.js.
// This file stays near 400 lines on purpose: the socket lifecycle, the reconnect decisions, the
// OPEN handshake and the per-reply rules (ErrorThreshold) read and write one state (state,
// failedAttempts, errors, drop reason), which a further split would pass around by hand.

const net = require('node:net');
const tls = require('node:tls');
const { EventEmitter } = require('node:events');
const { performance } = require('node:perf_hooks');
const crypto = require('node:crypto');
const {
  MessageReader, serializerFor, DEFAULT_PROFILE, STATUS, MESSAGE_TYPES: T, MAX_UINT32, des, DIRECTION,
} = require('../lib/protocol');
const { FrameWriter, INVALID_KINDS } = require('./injector');
const { InvokeBook } = require('./invoke-book');
const { Heartbeats } = require('./heartbeats');

const SWEEP_MS = 20;

/** Why a connection could not be made, in words an operator can act on. */
function explainConnectError(code, tls) {
  if (!code || code === 'ECONNREFUSED') return 'ECONNREFUSED: connection refused (is a gateway listening there?)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `${code}: host name not found`;
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `${code}: host unreachable`;
  if (/CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE/.test(code)) return `${code}: the gateway requires a client certificate (--tls-cert and --tls-key)`;
  if (/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|EPROTO|UNEXPECTED_MESSAGE/.test(code)) return `${code}: TLS to a port that does not speak TLS (a plain GED-145 port?)`;
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|HOSTNAME|ALTNAME/.test(code)) return `${code}: the gateway's certificate is not trusted (--tls-ca)`;
  if (code === 'ECONNRESET' && tls) return 'ECONNRESET: the host reset the TLS handshake (a plain GED-145 port, or the allowlist?)';
  return code;
}

/**
 * new RouterConnection({host, port, side, settings, stats, injection, tls, rnd, desKey, pcap, halfHours})
 * halfHours: the router's RouterHalfHours (router-half-hours.js), told of every query copy as it settles.
 * A logical query is {scheduledAt, outstanding, settled, ...}; send(frameFields, logical) sends one copy.
 * Events:
 *   'open'                       a session is open (OPEN_CONF)
 *   'reply' (logical, msg, ms)   the first reply to a logical query, with its latency from scheduledAt
 *   'lost' (logical)             the connection dropped with the last copy of a logical query unanswered
 *   'down' (reason)              the connection ended; a reconnect follows unless stopping
 *   'gave-up'                    SessionRetryLimit failed attempts in a row: no more reconnects
 *   'closed'                     after stop(), once the socket is gone
 */
class RouterConnection extends EventEmitter {
  constructor({
    host, port, side = 'A', settings, stats, injection = {}, tls: tlsOptions = null, rnd = Math.random, desKey = null, pcap = null,
    profile = DEFAULT_PROFILE, halfHours = null,
  }) {
    super();
    this.halfHours = halfHours;
    this.profile = profile; // the wire numbering this router speaks
    this.serialize = serializerFor(profile);
    this.pcap = pcap; // a PcapWriter: every write and every data event is recorded
    this.desKey = desKey; // the private key: OPEN_REQ asks for encryption when set
    this.cipher = undefined; // des.createSessionCipher once an encrypted session is open
    this.host = host;
    this.port = port;
    this.side = side;
    this.connectInfo = settings.connectInfo[side]; // also this side's row in the half-hour figures
    this.settings = settings;
    this.runStats = stats;
    this.injection = injection;
    this.tlsOptions = tlsOptions;
    this.rnd = rnd;
    this.state = 'idle';
    this.socket = null;
    this.writer = null;
    this.nextInvokeId = 1;
    this.book = new InvokeBook(stats);
    this.reader = null;
    this.flow = null; // the pcap flow of the current connection
    this.socketError = null;
    this.hostEnded = false; // the host's FIN came on this connection
    this.dropReason = null;
    this.dropWasFailure = false;
    this.openInvokeId = 0;
    this.openSentAt = 0;
    this.openRefused = null;
    this.versionIndex = 0;
    this.sessionKey = null;
    this.heartbeats = new Heartbeats(this, (reason) => this.drop(reason, true));
    this.errors = 0;
    this.failedAttempts = 0;
    this.lastTx = 0;
    this.lastRx = 0;
    this.stopping = false;
    this.closeWait = null;
    this.sweepTimer = null;
    this.retryTimer = null;
    this.version = undefined;
  }

  get stats() {
    return this.runStats;
  }

  /** The router starts a new RunStats for each run; the book counts into the same one. */
  set stats(stats) {
    this.runStats = stats;
    if (this.book) this.book.stats = stats;
  }

  /** A session is open and the host has not sent its FIN: a query sent now can be answered. */
  get isOpen() {
    return this.state === 'open' && !this.hostEnded;
  }

  start() {
    this.stopping = false;
    this.connect();
    return this;
  }

  invokeId() {
    const id = this.nextInvokeId;
    this.nextInvokeId = id === MAX_UINT32 ? 1 : id + 1;
    return id;
  }

  connect() {
    this.state = 'connecting';
    const onConnect = () => this.onConnect();
    this.socket = this.tlsOptions
      ? tls.connect({ host: this.host, port: this.port, ...this.tlsOptions }, onConnect)
      : net.connect({ host: this.host, port: this.port }, onConnect);
    this.socket.setNoDelay(true);
    this.reader = new MessageReader({
      direction: DIRECTION.HOST_TO_ROUTER,
      profile: this.profile,
      onMessage: (m) => this.onMessage(m),
      onError: (e) => this.onProtocolError(e),
    });
    this.firstBytes = null; // what the host sent first on this connection: says what it speaks when it is not GED-145
    this.socket.on('data', (chunk) => {
      this.lastRx = performance.now();
      if (this.firstBytes === null) this.firstBytes = Buffer.from(chunk.subarray(0, 8));
      if (this.flow) this.flow.in(chunk);
      this.reader.push(chunk);
    });
    this.hostEnded = false;
    // The host's FIN: a router sends nothing more on this connection (TCP could not answer it).
    this.socket.on('end', () => { this.hostEnded = true; });
    this.socket.on('error', (err) => { this.socketError = err.code || err.message; });
    this.socket.on('close', () => this.onSocketClose());
  }

  onConnect() {
    let onWrite;
    if (this.pcap && !this.tlsOptions) {
      const socket = this.socket;
      this.flow = this.pcap.flow({
        clientAddress: socket.localAddress, clientPort: socket.localPort, serverAddress: socket.remoteAddress, serverPort: socket.remotePort,
      });
      const flow = this.flow;
      onWrite = (piece) => flow.out(piece); // each piece as it goes to the socket, so --frag shows as it happened
    }
    this.writer = new FrameWriter(this.socket, this.injection, this.rnd, { onWrite });
    this.state = 'opening';
    this.versionIndex = 0;
    this.sendOpen();
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
  }

  sendOpen() {
    const s = this.settings;
    this.version = s.versions[this.versionIndex];
    this.openInvokeId = this.invokeId();
    this.openSentAt = performance.now();
    let sessionKey;
    if (this.desKey) {
      // docs/protocol.md section 7: a random K, sent as K||K encrypted with the private key.
      this.sessionKey = crypto.randomBytes(8);
      sessionKey = des.sealSessionKey(this.desKey, this.sessionKey);
    }
    this.write(this.serialize.openReq({
      invokeId: this.openInvokeId, version: this.version, idleTimeoutMs: 4 * s.heartbeatIntervalMs, encryption: this.desKey ? 1 : 0, config: this.connectInfo,
      sessionKey,
    }, { nul: true }));
  }

  write(buf) {
    this.lastTx = performance.now();
    this.writer.write(buf);
  }

  /** Sends one copy of a logical query; false when this side has no open session. */
  send(fields, logical) {
    if (!this.isOpen) return false;
    const invokeId = this.invokeId();
    this.book.addQuery(invokeId, logical);
    this.write(this.serialize.queryReq({ ...fields, invokeId }, { nul: true, cipher: this.cipher }));
    return true;
  }

  /** Sends an invalid frame of the given kind; the host's answer is checked against its kind. */
  sendInvalid(kind) {
    if (!this.isOpen) return false;
    const spec = INVALID_KINDS[kind];
    const invokeId = this.invokeId();
    this.book.addInvalid(invokeId, kind, spec.expect);
    this.write(spec.build(invokeId, this.rnd, this.serialize));
    return true;
  }

  /** One HEARTBEAT_REQ now; resolves with its round trip in ms (rejects if the connection drops). */
  ping() {
    if (!this.isOpen) return Promise.reject(new Error('no open session'));
    return this.heartbeats.ping();
  }

  sendParam(paramId, paramValue) {
    if (!this.isOpen) return;
    this.write(this.serialize.paramReq({ invokeId: this.invokeId(), paramId, paramValue }));
  }

  // ---- replies -----------------------------------------------------------------------------

  onMessage(msg) {
    switch (msg.typeId) {
      case T.OPEN_CONF: return this.onOpenConf(msg);
      case T.HEARTBEAT_CONF: return this.heartbeats.onConf(msg);
      case T.QUERY_RESP: return this.onReply(msg, msg.status);
      case T.FAILURE_CONF: return this.onFailureConf(msg);
      case T.FAILURE_EVENT:
        this.stats.failureEvents++;
        return undefined;
      case T.CLOSE_CONF:
        if (this.closeWait && msg.invokeId === this.closeWait.invokeId) this.closeWait.resolve();
        return undefined;
      case T.PARAM_CONF: return undefined;
      default: return undefined;
    }
  }

  onOpenConf(msg) {
    if (this.state !== 'opening' || msg.invokeId !== this.openInvokeId) {
      this.stats.violation('unexpected OPEN_CONF');
      return;
    }
    if (this.desKey) {
      this.cipher = des.createSessionCipher(this.sessionKey, { onDropped: () => this.stats.violation('undecryptable field from host') });
      this.reader.setCipher(this.cipher);
    }
    this.state = 'open';
    this.failedAttempts = 0;
    this.heartbeats.reset();
    this.errors = 0;
    this.emit('open');
  }

  onFailureConf(msg) {
    if (this.state === 'opening' && msg.invokeId === this.openInvokeId) {
      if (msg.status === STATUS.E_AG_INVALID_VERSION && this.versionIndex + 1 < this.settings.versions.length) {
        this.versionIndex++;
        this.sendOpen(); // the next lower version, on the same connection
        return;
      }
      this.openRefused = msg.statusName || String(msg.status);
      this.drop(`OPEN_REQ refused: ${this.openRefused}`, true);
      return;
    }
    if (this.book.answerInvalid(msg.invokeId, msg.status, msg.statusName, STATUS.E_AG_INVALID_MESSAGE)) return;
    this.onReply(msg, msg.status);
  }

  onReply(msg, status) {
    const entry = this.book.takeReply(msg.invokeId);
    if (entry === undefined) return;
    const now = performance.now();
    const ms = now - entry.sentAt;
    const inTime = ms <= this.settings.requestTimeoutMs;
    if (inTime) this.heartbeats.answeredInTime();
    if (this.halfHours !== null && !entry.overdue) {
      // An overdue copy was booked as a timeout when its RequestTimeout passed; one the sweep has
      // not reached yet is a timeout all the same.
      if (inTime) this.halfHours.replied(this.connectInfo, msg.typeId === T.FAILURE_CONF, ms);
      else this.halfHours.timedOut(this.connectInfo);
    }
    if (status === 0) this.errors = 0;
    else if (++this.errors >= this.settings.errorThreshold && this.settings.errorThreshold > 0) {
      this.finish(entry.logical, msg, now);
      this.drop(`ErrorThreshold (${this.settings.errorThreshold}) consecutive errors`, true);
      return;
    }
    this.finish(entry.logical, msg, now);
  }

  finish(logical, msg, now) {
    logical.outstanding--;
    if (logical.settled) return; // the other side answered this logical query first
    logical.settled = true;
    const latency = now - logical.scheduledAt;
    this.stats.answered(latency, msg.status, this.settings.requestTimeoutMs);
    this.emit('reply', logical, msg, latency);
  }

  onProtocolError(err) {
    this.stats.violation(`host sent a bad frame: ${err.reason}`);
    if (!err.fatal) return;
    if (this.firstBytes !== null && this.firstBytes.toString('latin1').startsWith('HTTP/')) {
      this.drop(`the host answered in HTTP, not GED-145: ${this.port} is a web port (the gateway's admin port?), not its GED-145 port`, true);
    } else {
      this.drop('host framing broken', true);
    }
  }

  // ---- timers ------------------------------------------------------------------------------

  sweep() {
    const now = performance.now();
    const s = this.settings;
    if (this.state === 'opening') {
      if (now - this.openSentAt > s.openTimeoutMs) this.drop('OpenTimeout', true);
      return;
    }
    if (this.state !== 'open') return;
    // Queries past RequestTimeout: each counts as a missed heartbeat.
    this.book.sweepOverdue(now, s.requestTimeoutMs, () => {
      if (this.halfHours !== null) this.halfHours.timedOut(this.connectInfo);
      this.miss();
      return this.state === 'open';
    });
    if (this.state !== 'open') return;
    this.heartbeats.tick(now);
  }

  miss() {
    this.heartbeats.miss();
  }

  // ---- closing -----------------------------------------------------------------------------

  /** The router drops the connection itself; `failure` means wait SessionRetry before the next try. */
  drop(reason, failure) {
    if (this.socket === null || this.state === 'closed' || this.state === 'idle') return;
    this.dropReason = reason;
    this.dropWasFailure = failure;
    this.socket.destroy();
  }

  onSocketClose() {
    const wasOpen = this.state === 'open';
    const wasOpening = this.state === 'opening';
    const hadSocket = this.state !== 'connecting' || this.writer !== null;
    this.state = 'closed'; // before anything below can call send()
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    if (this.writer) this.writer.stop();
    this.writer = null;
    if (this.flow) this.flow.close();
    this.flow = null;
    let reason = this.dropReason;
    if (!reason) {
      const fatalKind = this.book.closedByFatal();
      if (fatalKind !== null) {
        reason = `host closed after invalid ${fatalKind} frame`;
      } else if (!hadSocket) reason = `connect failed: ${explainConnectError(this.socketError, this.tlsOptions !== null)}`;
      else if (this.stopping) reason = 'closed by router';
      else if (wasOpening && (!this.socketError || (this.socketError === 'ECONNRESET' && this.tlsOptions === null))) {
        // Closed with no OPEN_CONF: the host turned this router away. A reset says the same thing
        // when our OPEN_REQ reached the host before it closed (unread data makes the kernel reset).
        reason = 'closed by the host right after connecting, before OPEN_CONF (its allowlist, or its connection or session limit?)';
      } else if (wasOpening) reason = `closed by host before OPEN_CONF (${explainConnectError(this.socketError, this.tlsOptions !== null)})`;
      else reason = `closed by host${this.socketError ? ` (${this.socketError})` : ''}`;
    }
    const failure = this.dropWasFailure || !hadSocket || (!wasOpen && !this.stopping);
    this.dropReason = null;
    this.dropWasFailure = false;
    this.socketError = null;
    this.stats.closed(reason);
    const inTime = this.book.loseAll((logical) => this.emit('lost', logical));
    if (this.halfHours !== null) this.halfHours.lost(this.connectInfo, inTime);
    this.heartbeats.closed(reason);
    if (this.closeWait) this.closeWait.resolve();
    this.emit('down', reason);
    if (this.stopping) {
      this.emit('closed');
      return;
    }
    this.scheduleReconnect(failure);
  }

  scheduleReconnect(failure) {
    const s = this.settings;
    if (failure) {
      this.failedAttempts++;
      if (s.sessionRetryLimit > 0 && this.failedAttempts > s.sessionRetryLimit) {
        this.emit('gave-up');
        return;
      }
    }
    const delay = failure ? s.sessionRetryMs : 0; // a clean drop by the host: reconnect at once
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.stopping) return;
      this.stats.reconnects++;
      this.connect();
    }, delay);
  }

  /** CLOSE_REQ, wait for CLOSE_CONF (at most waitMs), then close the socket. */
  async stop(waitMs = 2000) {
    this.stopping = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.socket === null || this.state === 'closed') return;
    if (this.isOpen) {
      const invokeId = this.invokeId();
      let timer;
      const answered = new Promise((resolve) => {
        this.closeWait = { invokeId, resolve };
        timer = setTimeout(resolve, waitMs);
      });
      this.write(this.serialize.closeReq(invokeId));
      await answered;
      clearTimeout(timer);
      this.closeWait = null;
    }
    if (this.state === 'closed') return;
    const closed = new Promise((resolve) => this.once('closed', resolve));
    this.socket.end();
    setTimeout(() => this.socket && this.socket.destroy(), 500).unref();
    await closed;
  }

  /** Abrupt disconnect with whatever is in flight. */
  abort() {
    this.drop('aborted by test', false);
  }

  /** A slow reader: stop reading replies (the host's buffers fill up). */
  stopReading() {
    if (this.socket) this.socket.pause();
  }

  resumeReading() {
    if (this.socket) this.socket.resume();
  }
}

module.exports = { RouterConnection, explainConnectError };
