'use strict';

// The router-facing TLS listener: a tls.Server whose TCP connections are looked at first (their
// logger from the connection log budget, the allowlist, the handshake caps and deadline of
// tls-handshakes.js), and whose TLS sockets reach the gateway once their handshake is done.
//
// A TLS socket is matched to its TCP connection by the connection's two ends (local and remote
// address and port: no two open connections share them), read through the sockets' public
// getters; Node keeps a TLS socket's TCP socket in a private field. A TLS socket whose TCP
// connection has already closed knows its ends no more: its failure is the closed connection's,
// reported once when that closes (connectionClosed).

const tls = require('node:tls');
const { PendingHandshakes } = require('./tls-handshakes');

/** Longer than any limits.handshakeTimeoutMs (the schema's maximum): Node's own deadline never comes first. */
const HANDSHAKE_BACKSTOP_MS = 600_000;

const endsOf = (socket) => `${socket.localAddress}:${socket.localPort}>${socket.remoteAddress}:${socket.remotePort}`;

/**
 * What the gateway keeps of a TCP connection to the TLS listener until it closes. peer is kept at
 * accept (a TLS socket that failed may no longer know it); refused: the gateway closed it
 * (allowlist, the handshake caps and deadline), already counted and logged; done: its handshake
 * succeeded, or its failure is logged.
 */
class TlsConnection {
  constructor(raw, log) {
    this.raw = raw;
    this.peer = `${raw.remoteAddress}:${raw.remotePort}`;
    this.log = log;
    this.refused = false;
    this.done = false;
  }

  /** The gateway closes it: nothing of it is reported again. */
  refuse() {
    this.refused = true;
  }

  /** Its handshake ended: true for the first report (the one to log a failure). */
  settle() {
    if (this.done || this.refused) return false;
    this.done = true;
    return true;
  }
}

/**
 * A tls.Server for the listener's files (config.listenerTls; tls.ca: client certificates required
 * and checked against it). host: what it needs of the gateway: connectionLog (the log budget),
 * limits() (in force now), admit(socket, log) (the allowlist: false, and the socket closed,
 * when it says no), refused(reason, peer) (ged145:connection:refused) and onSecure(socket, log).
 * Returns {server, handshakes}.
 */
function createTlsListener(config, host) {
  const connections = new Map(); // endsOf(TCP socket) -> TlsConnection, while it is open
  const handshakes = new PendingHandshakes({
    limits: host.limits,
    onClosed(raw, why, detail) {
      const c = connections.get(endsOf(raw));
      c.refuse(); // its TLS socket's failure (a hang-up) is not logged again
      if (why === 'timeout') {
        host.refused('tls', c.peer);
        const { handshakeTimeoutMs, openTimeoutMs } = host.limits();
        c.log.warn(`TLS handshake failed: not finished within ${Math.min(handshakeTimeoutMs, openTimeoutMs)} ms (limits.handshakeTimeoutMs)`, { peer: c.peer });
        return;
      }
      host.refused('handshakes', c.peer);
      c.log.warn('TLS handshake closed to make room: too many in progress (limits.maxHandshakes, limits.maxHandshakesPerAddress)', {
        peer: c.peer, ...detail,
      });
    },
  });
  const failed = (c, what) => {
    if (!c.settle()) return;
    host.refused('tls', c.peer);
    c.log.warn(`TLS handshake failed: ${what}`, { peer: c.peer });
  };

  const { ca } = config.tls;
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
    const c = connections.get(endsOf(socket));
    if (c === undefined) { // its TCP connection closed meanwhile: nothing to serve
      socket.destroy();
      return;
    }
    handshakes.done(c.raw);
    c.settle();
    host.onSecure(socket, c.log);
  });
  server.on('connection', (raw) => {
    const c = new TlsConnection(raw, host.connectionLog.accept(raw.remoteAddress));
    const ends = endsOf(raw);
    connections.set(ends, c);
    raw.once('close', () => {
      connections.delete(ends);
      handshakes.done(raw);
      failed(c, 'the connection closed before the handshake finished');
    });
    if (!host.admit(raw, c.log)) {
      c.refuse(); // closed before a single byte is read (and not logged again as a failed TLS handshake)
      return;
    }
    handshakes.add(raw, raw.remoteAddress);
  });
  server.on('tlsClientError', (err, socket) => {
    if (!socket) return;
    socket.destroy(); // with a listener here, Node leaves a failed handshake's socket open
    const c = connections.get(endsOf(socket));
    if (c !== undefined) failed(c, err.code || err.message); // else its TCP connection is gone and reported so
  });
  return { server, handshakes };
}

/**
 * A reload's TLS files (read and checked by the config's compile, config/backend.js) for the handshakes
 * from now on: tls.Server#setSecureContext, as nginx does on reload. An open session keeps the
 * certificate it was made with; requestCert stays as the listener was made (tls.ca on or off needs a restart).
 */
function applyListenerTls(server, config) {
  server.setSecureContext(config.listenerTls);
}

module.exports = { createTlsListener, applyListenerTls };
