'use strict';

// The gateway: a TCP listener for ICM routers, one Session per connection, one backend client
// shared by all of them. Owns the process-wide limits and the drain on shutdown.

const net = require('node:net');
const tls = require('node:tls');
const { STATUS, createProfile, serializerFor } = require('../lib/protocol');
const { Session } = require('./session/session');
const { SessionHost } = require('./session/host');
const { Backend } = require('./backend');
const { keptAnswer, keptError } = require('./answer/writer');
const { channels } = require('./session/diagnostics');
const { HandlerFaults } = require('./backend/user-code');
const { holdRestartSettings } = require('./config/restart');
const { ROUTE_KIND } = require('./route-kinds');
const { createLogger, applyLogSettings } = require('../lib/logger');
const { PendingHandshakes } = require('./tls-handshakes');

const SESSION_REFUSAL_LOG_MS = 60_000;

/**
 * What the gateway keeps on a TCP connection to its TLS listener, under a symbol of its own (as ws
 * keeps kWebSocket): {peer, log, refused}. peer is kept at accept: once a handshake times out, its
 * TLS socket no longer knows its peer's address; refused: the gateway closed it (allowlist, the
 * handshake caps and deadline), so that its tlsClientError is not logged again.
 */
const kConnection = Symbol('ged145.connection');

class Gateway extends SessionHost {
  /**
   * The gateway counts nothing itself: it publishes what happens (session/diagnostics.js,
   * backend/diagnostics.js), and ops/ subscribes (ops/attach.js).
   */
  constructor(config, { log } = {}) {
    // The wire numbering of this gateway's sessions (config `protocol`); a reload keeps it.
    const profile = createProfile(config.protocol);
    super({
      config,
      log: log || createLogger({ component: 'gateway', ...config.log }),
      profile,
      serialize: serializerFor(profile),
    });
    this.faults = new HandlerFaults({ log: this.log, owner: this }); // per route, across reloads
    this.backend = this.newBackend(config);
    this.sessions = new Set();
    this.openCount = 0;
    this.draining = false;
    this.allowlist = config.allowlistFilter || null; // null = any address (see allowlist.js)
    this.tls = config.tls.cert !== null;
    this.handshakes = this.tls ? pendingHandshakes(this) : null;
    this.server = createListener(config, this);
    this.server.maxConnections = config.limits.maxConnections;
    this.server.on('drop', (data) => this.refused('max_connections', data && `${data.remoteAddress}:${data.remotePort}`));
    this.idleWaiters = [];
    this.sessionRefusals = { count: 0, loggedAt: 0 };
    this.startHooks = []; // run before the listener opens (beforeListen): the warm-up, registered by whoever starts the gateway
  }

  /**
   * Runs hook(gateway) before the listener opens, as fastify's onReady: what a start needs beside
   * the core (gateway/ops/warmup.js) is registered from where the gateway is started, and the core
   * knows nothing of it. A hook deals with its own failures: one that throws fails the start.
   */
  beforeListen(hook) {
    this.startHooks.push(hook);
    return this;
  }

  /**
   * Runs the start hooks, then listens on port and host, or on fd: a listening socket the service
   * manager passed (socket activation, gateway/ops/listen-fds.js), whose address the unit chose.
   * exclusive: in a cluster worker, a listener of this process's own, not shared through the
   * primary (the warm-up's private gateway).
   */
  async listen({
    port = this.config.port, host = this.config.host, fd = null, exclusive = false,
  } = {}) {
    for (const hook of this.startHooks) await hook(this);
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(fd === null ? { port, host, exclusive } : { fd }, () => {
        this.server.off('error', reject);
        this.server.on('error', (err) => this.log.error(`listener error: ${err.message}`));
        const address = this.server.address();
        this.port = address.port;
        const on = fd === null ? host : address.address; // with an inherited socket, the unit's address
        const from = fd === null ? '' : ` (socket ${fd} from the service manager)`;
        this.log.info(`listening for ICM routers on ${on}:${this.port}${this.tls ? ' (TLS)' : ''}${from}`, {
          backend: this.config.backend.url, engine: this.config.backend.engine, deadlineMs: this.config.deadlineMs,
          desKey: this.config.desKey ? 'configured' : 'none',
        });
        if (this.allowlist === null && (on === '0.0.0.0' || on === '::')) {
          this.log.warn(`listening on every address (${on}) with an empty allowlist: any host that reaches port ${this.port} `
            + 'can open sessions; set allowlist to the routers\' addresses (README, "Before production")');
        }
        resolve(this.port);
      });
    });
  }

  /**
   * The first look at a TCP connection (before any TLS handshake): the allowlist. log: the
   * connection's logger from the connection log budget (session/connection-log.js).
   */
  admitConnection(socket, log) {
    if (this.allowlist === null || this.allowlist.allows(socket.remoteAddress)) return true;
    // Closed before a single byte is read (and not logged again as a failed TLS handshake).
    if (socket[kConnection] !== undefined) socket[kConnection].refused = true;
    this.refused('allowlist', `${socket.remoteAddress}:${socket.remotePort}`);
    log.warn('connection refused: address not on the allowlist', { peer: `${socket.remoteAddress}:${socket.remotePort}` });
    socket.destroy();
    return false;
  }

  /** A connection to serve: plain TCP as accepted, or a TLS socket once its handshake is done. */
  onConnection(socket) {
    let log;
    if (this.tls === false) {
      log = this.connectionLog.accept(socket.remoteAddress);
      if (!this.admitConnection(socket, log)) return;
    } else {
      log = socket._parent[kConnection].log; // given when its TCP connection was accepted (createListener)
    }
    if (this.draining) {
      this.refused('draining', `${socket.remoteAddress}:${socket.remotePort}`);
      socket.destroy();
      return;
    }
    const session = new Session(socket, this, log);
    this.sessions.add(session);
  }

  /** Called at OPEN_REQ: a refusal text, or null when the session may open. */
  admitSession(session) {
    if (this.draining) {
      session.log.info('OPEN_REQ refused: host is shutting down', { session: session.id, peer: session.peer });
      return 'host is shutting down';
    }
    if (this.openCount >= this.config.limits.maxSessions) {
      this.refusedAtLimit(session);
      return `session limit (${this.config.limits.maxSessions}) reached`;
    }
    this.openCount++;
    return null;
  }

  /**
   * Sessions refused at limits.maxSessions: one error line at the first refusal, then at most one a
   * minute while refusals go on, with the count. Sessions that open and only send heartbeats can
   * hold every slot; the allowlist is the defence (docs/reliability.md).
   */
  refusedAtLimit(session) {
    this.refused('max_sessions', session.peer);
    const r = this.sessionRefusals;
    r.count++;
    const now = Date.now();
    if (r.loggedAt !== 0 && now - r.loggedAt < SESSION_REFUSAL_LOG_MS) return;
    this.log.error(`refusing routers: session limit (${this.config.limits.maxSessions}) reached; limits.maxSessions or the allowlist may need a look`, {
      refused: r.count, since: new Date(r.loggedAt || now).toISOString(), peer: session.peer, open: this.openCount,
    });
    r.loggedAt = now;
    r.count = 0;
  }

  /** A connection closed before it became a session (ged145:connection:refused); reason: as ged145_connections_refused_total{reason}. */
  refused(reason, peer) {
    if (channels.connectionRefused.hasSubscribers) channels.connectionRefused.publish({ gateway: this, reason, peer: peer || null });
  }

  releaseSession() {
    this.openCount--;
  }

  onSessionClosed(session) {
    this.sessions.delete(session);
    this.onSessionIdle();
    if (this.sessions.size === 0 && this.closedWaiters) for (const w of this.closedWaiters.splice(0)) w();
  }

  /** Resolves once every session has closed (and logged its last line). */
  allClosed() {
    if (this.sessions.size === 0) return Promise.resolve();
    if (!this.closedWaiters) this.closedWaiters = [];
    return new Promise((resolve) => this.closedWaiters.push(resolve));
  }

  onSessionIdle() {
    if (this.idleWaiters.length === 0 || this.stillDraining()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** A query is in flight, or a session is draining still (it ends itself once it has none: Session.drain). */
  stillDraining() {
    for (const s of this.sessions) if (s.inflight.size > 0 || s.draining) return true;
    return false;
  }

  inFlight() {
    let n = 0;
    for (const s of this.sessions) n += s.inflight.size;
    return n;
  }

  /** {state: count} of this gateway's connections (session/states.js), read by ged145_sessions at scrape time. */
  sessionCounts() {
    const counts = {};
    for (const s of this.sessions) counts[s.state] = (counts[s.state] || 0) + 1;
    return counts;
  }

  /**
   * Drain: stop accepting, refuse new sessions (E_AG_HOST_OFFLINE); each session goes on answering
   * and ends at its first moment with nothing in flight (Session.drain), with a FAILURE_EVENT
   * E_AG_HOST_OFFLINE and our FIN; after shutdownTimeoutMs every session ends, what is in flight
   * answered first. The router reconnects at once: to the other workers of a rolling restart.
   */
  async shutdown(reason = 'shutdown') {
    if (this.draining) return;
    this.draining = true;
    this.log.info(`${reason}: draining`, { sessions: this.sessions.size, inFlight: this.inFlight() });
    const closed = new Promise((resolve) => this.server.close(resolve));
    const offline = () => this.serialize.failureEvent(STATUS.E_AG_HOST_OFFLINE, 'host shutting down');
    for (const s of this.sessions) s.drain('host shutting down', offline());
    if (this.stillDraining()) {
      await new Promise((resolve) => {
        const t = setTimeout(resolve, this.config.shutdownTimeoutMs);
        this.idleWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    for (const s of this.sessions) s.end('host shutting down', offline());
    // Each session answers what it has in flight, then lingers for the router's close.
    const bound = this.config.deadlineMs + this.config.limits.closeLingerMs + 1000;
    await Promise.race([Promise.all([closed, this.allClosed()]), new Promise((r) => setTimeout(r, bound).unref())]);
    await this.backend.close();
    if (this.handshakes) this.handshakes.close();
    this.connectionLog.close();
    this.log.info('stopped');
  }

  /** The backend side for config: its cache keeps answers in the form answer/ fits them to (keptAnswer). */
  newBackend(config, { cache, previous = null } = {}) {
    return new Backend(config, {
      log: this.log,
      owner: this,
      cache,
      previous,
      keepAnswer: keptAnswer(config.limits.maxMessageLength, config.answers),
      keepError: keptError,
      faults: this.faults,
    });
  }

  /**
   * SIGHUP: a new validated config takes over without dropping a router. Routes, backend (its TLS
   * files read again: a new connection pool), fallback, cache, breaker, duplicates and the deadline
   * apply to queries read from now on (those in flight finish under the settings they started
   * with); the log (level, console, its file opened afresh), allowlist and the session and
   * connection caps at once; the listener's certificate, key and CA to TLS handshakes from now on
   * (open sessions keep theirs, as nginx does); per-connection limits to connections accepted from
   * now on. Settings that need a restart (config/restart.js) are named in the log when they
   * differ, and the running values stay.
   */
  reload(config) {
    const old = this.config;
    // The wire numbering stays as the sessions opened with it, the listener as it was made, until a restart.
    const needRestart = holdRestartSettings(old, config);
    applyLogSettings(this.log, config.log); // first: a log file that cannot be opened throws before anything changed
    if (this.tls && !needRestart.includes('tls')) applyListenerTls(this.server, config);
    const oldBackend = this.backend;
    const sameCache = JSON.stringify(old.availability.cache) === JSON.stringify(config.availability.cache);
    this.backend = this.newBackend(config, { cache: sameCache ? oldBackend.cache : undefined, previous: oldBackend });
    // The old backend serves the queries it already has; its connections close once they are answered.
    setTimeout(() => oldBackend.close({ keepCache: sameCache }), old.deadlineMs + 1000).unref();
    this.allowlist = config.allowlistFilter || null;
    this.server.maxConnections = config.limits.maxConnections;
    this.config = config;
    const modules = [...config.compiledRoutes].filter(([, r]) => r.kind === ROUTE_KIND.MODULE).map(([subtype]) => subtype);
    const afresh = modules.length > 0 ? ` (handler modules loaded afresh: ${modules.join(', ')})` : '';
    this.log.info(`configuration reloaded${afresh}; router sessions stay connected`, { sessions: this.sessions.size, inFlight: this.inFlight() });
    if (needRestart.length > 0) {
      this.log.warn(`reload: ${needRestart.join(', ')} changed and will apply only after a restart`);
    }
    return needRestart;
  }

  /** What the gateway knows of itself for the status page; ops/status.js adds what its subscribers counted. */
  snapshot() {
    return {
      config: { file: this.config.configFile || null, workers: this.config.workers },
      listener: { host: this.config.host, port: this.port, tls: this.tls === true, deadlineMs: this.config.deadlineMs },
      sessions: this.toJSON(),
      backend: this.backend.toJSON(),
      handlers: this.faults.toJSON(),
    };
  }

  toJSON() {
    return [...this.sessions].map((s) => s.toJSON());
  }
}

/**
 * A plain TCP listener, or a TLS one when tls.cert/tls.key are set (tls.ca: client certificates
 * are required and checked against it). Same sessions and limits either way.
 */
function createListener(config, gateway) {
  const { cert, ca } = config.tls;
  if (cert === null) {
    // allowHalfOpen: a router that half-closes after its last query still gets its answers.
    return net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => gateway.onConnection(socket));
  }
  // Read and checked at load (config/backend.js compileListenerTls), as `ged145 config check` does.
  const server = tls.createServer({
    ...config.listenerTls,
    requestCert: Boolean(ca),
    rejectUnauthorized: Boolean(ca),
    noDelay: true,
    allowHalfOpen: true,
    // Only a backstop: the handshake's deadline is limits.handshakeTimeoutMs, kept by PendingHandshakes.
    handshakeTimeout: HANDSHAKE_BACKSTOP_MS,
  }, (socket) => {
    gateway.handshakes.done(socket._parent);
    gateway.onConnection(socket);
  });
  server.on('connection', (socket) => acceptTlsConnection(gateway, socket));
  server.on('tlsClientError', (err, socket) => {
    if (socket) socket.destroy(); // with a listener here, Node leaves a failed handshake's socket open
    const raw = socket && socket._parent ? socket._parent : socket;
    if (raw) gateway.handshakes.done(raw);
    const kept = raw ? raw[kConnection] : undefined;
    if (kept !== undefined && kept.refused) return; // the allowlist said no, or we closed it (PendingHandshakes)
    const peer = kept !== undefined ? kept.peer : socket && socket.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : 'unknown';
    const log = kept !== undefined ? kept.log : gateway.log;
    gateway.refused('tls', peer);
    log.warn(`TLS handshake failed: ${err.code || err.message}`, { peer });
  });
  return server;
}

/** Longer than any limits.handshakeTimeoutMs (the schema's maximum): Node's own deadline never comes first. */
const HANDSHAKE_BACKSTOP_MS = 600_000;

/** A TCP connection to the TLS listener: its logger, the allowlist, then its handshake is counted and timed. */
function acceptTlsConnection(gateway, socket) {
  const kept = { peer: `${socket.remoteAddress}:${socket.remotePort}`, log: gateway.connectionLog.accept(socket.remoteAddress), refused: false };
  socket[kConnection] = kept;
  if (!gateway.admitConnection(socket, kept.log)) return;
  gateway.handshakes.add(socket, socket.remoteAddress);
  socket.once('close', () => gateway.handshakes.done(socket));
}

/** The handshakes in progress, under limits.maxHandshakes and .maxHandshakesPerAddress, each timed (tls-handshakes.js). */
function pendingHandshakes(gateway) {
  return new PendingHandshakes({
    limits: () => gateway.config.limits,
    onClosed(socket, why, detail) {
      const kept = socket[kConnection];
      kept.refused = true; // its tlsClientError (a hang-up) is not logged again
      const { limits } = gateway.config;
      if (why === 'timeout') {
        gateway.refused('tls', kept.peer);
        const ms = Math.min(limits.handshakeTimeoutMs, limits.openTimeoutMs);
        kept.log.warn(`TLS handshake failed: not finished within ${ms} ms (limits.handshakeTimeoutMs)`, { peer: kept.peer });
        return;
      }
      gateway.refused('handshakes', kept.peer);
      kept.log.warn('TLS handshake closed to make room: too many in progress (limits.maxHandshakes, limits.maxHandshakesPerAddress)', {
        peer: kept.peer, ...detail,
      });
    },
  });
}

/**
 * A reload's TLS files (read and checked by the config's compile, config/backend.js) for the handshakes
 * from now on: tls.Server#setSecureContext, as nginx does on reload. An open session keeps the
 * certificate it was made with; requestCert stays as the listener was made (tls.ca on or off needs a restart).
 */
function applyListenerTls(server, config) {
  server.setSecureContext(config.listenerTls);
}

module.exports = { Gateway };
