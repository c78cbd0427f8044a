'use strict';

// OPEN_REQ: the negotiation that makes a connection a session (docs/protocol.md, session
// open). The version must be one of protocol.versions; the encryption the router asks for must
// be what this host can do (a key configured, the SESSION_KEY opening to two equal halves, or no
// encryption where des.require allows it); the server must have a session slot. Each refusal has
// its own status and log line; a refused key or slot also closes the connection.

const {
  STATUS, des, IDLE_TIMEOUT_RANGE,
} = require('../../lib/protocol');

/** Handles OPEN_REQ msg for session s (a Session). */
function openSession(s, msg) {
  if (s.state === 'open') {
    s.failure(msg.invokeId, STATUS.E_AG_SESSION_ACTIVE, 'session is already open');
    return;
  }
  const { config } = s.gateway;
  if (!config.protocol.versions.includes(msg.version)) {
    const n = s.throttle.hit('version');
    if (n) s.log.warn(
      'OPEN_REQ refused: version not supported', { session: s.id, peer: s.peer, version: msg.version, supported: config.protocol.versions, count: n }
    );
    s.failure(msg.invokeId, STATUS.E_AG_INVALID_VERSION, `version ${msg.version} is not supported`);
    return;
  }
  const sessionKey = openEncryption(s, msg);
  if (sessionKey === undefined) return; // refused, and closing
  const refusal = s.gateway.admitSession(s);
  if (refusal) {
    s.failure(msg.invokeId, STATUS.E_AG_HOST_OFFLINE, refusal);
    s.end(refusal);
    return;
  }
  s.clearOpenTimer();
  // Each OPEN sets encryption afresh: an encrypted session closed and reopened plain is plain.
  setEncryption(s, sessionKey);
  s.state = 'open';
  s.openedAt = new Date();
  s.connectInfo = msg.config;
  s.version = msg.version;
  s.idleTimeoutMs = idleTimeoutFor(s, msg.idleTimeoutMs);
  s.link.setIdleTimeout(s.idleTimeoutMs);
  s.send(s.serialize.openConf(msg.invokeId));
  s.log.info('session opened', {
    session: s.id, peer: s.peer, connectInfo: s.connectInfo, version: s.version, idleTimeoutMs: s.idleTimeoutMs, encrypted: s.encrypted,
  });
}

/**
 * OPEN_REQ's Encryption and SESSION_KEY (docs/protocol.md, encryption): the session key, null for
 * a plain session, or undefined when the OPEN was refused (the refusal is sent and the
 * connection is closing).
 */
function openEncryption(s, msg) {
  const { desKey, des: desConfig } = s.gateway.config;
  if (msg.encryption === 0) {
    if (!desConfig.require) return null;
    s.log.warn('OPEN_REQ refused: this host requires DES encryption (des.require) and the router asked for none', { session: s.id, peer: s.peer });
    return refuseKey(s, msg, 'this host requires encryption', 'encryption required');
  }
  if (!desKey) {
    s.log.warn(
      'OPEN_REQ refused: the router asks for DES encryption and no key is configured (GED145_DES_KEY or des.keyFile)', { session: s.id, peer: s.peer }
    );
    return refuseKey(s, msg, 'encryption is not configured on this host', 'encryption requested without a key');
  }
  const sessionKey = des.openSessionKey(desKey, msg.sessionKey);
  if (sessionKey === null) {
    s.log.warn(
      'OPEN_REQ refused: SESSION_KEY does not decrypt to two equal halves (the router and the host have different private keys?)',
      { session: s.id, peer: s.peer }
    );
    return refuseKey(s, msg, 'session key does not match', 'invalid session key');
  }
  return sessionKey;
}

function refuseKey(s, msg, text, reason) {
  s.failure(msg.invokeId, STATUS.E_AG_INVALID_KEY, text);
  s.end(reason);
  return undefined;
}

/** docs/protocol.md, encryption: with a session key every tag of QUERY_REQ, QUERY_RESP and FAILURE_CONF is DES-encrypted. */
function setEncryption(s, sessionKey) {
  s.encrypted = sessionKey !== null;
  const cipher = sessionKey === null ? undefined : des.createSessionCipher(sessionKey, {
    onDropped: (tag, why) => {
      s.counters.droppedFields++;
      const n = s.throttle.hit('dropped-field');
      if (n) s.log.warn(
        `ignored an encrypted field: ${why} (do the router and this host share one DES key?)`, { session: s.id, tag, droppedFields: n }
      );
    },
  });
  s.reply.setCipher(cipher);
  s.link.setCipher(cipher);
}

/** The router's IdleTimeout when it is in range, else limits.defaultIdleTimeoutMs (logged when the router asked for an odd one). */
function idleTimeoutFor(s, requested) {
  if (requested === 0) return s.limits.defaultIdleTimeoutMs;
  if (requested >= IDLE_TIMEOUT_RANGE.min && requested <= IDLE_TIMEOUT_RANGE.max) return requested;
  const n = s.throttle.hit('idle-timeout');
  if (n) {
    s.log.warn(`OPEN_REQ IdleTimeout ${requested} ms is outside ${IDLE_TIMEOUT_RANGE.min}..${IDLE_TIMEOUT_RANGE.max}; using limits.defaultIdleTimeoutMs`, {
      session: s.id, peer: s.peer, defaultIdleTimeoutMs: s.limits.defaultIdleTimeoutMs,
    });
  }
  return s.limits.defaultIdleTimeoutMs;
}

module.exports = { openSession };
