'use strict';

// OPEN_REQ: the negotiation that makes a connection a session (docs/protocol.md, session
// open). The version must be one of protocol.versions; the encryption the router asks for must
// be what this host can do (a key configured, the SESSION_KEY opening to two equal halves, or no
// encryption where des.require allows it); the server must have a session slot. negotiateOpen()
// returns what was agreed, or the refusal with its status and whether it closes the connection;
// it logs each refusal. openSession() is the session's answer to OPEN_REQ: the refusal, or the
// agreement (its side, version, idle timeout and encryption), which the session applies to itself
// (Session.opened) before OPEN_CONF.

const {
  STATUS, des, IDLE_TIMEOUT_RANGE,
} = require('../../lib/protocol');
const { SESSION_STATE: S } = require('./states');
const { KeyCheck } = require('./key-check');

/** OPEN_REQ msg on session (session.js): refused with FAILURE_CONF (and maybe a close), or the session opens. */
function openSession(session, msg) {
  if (session.state === S.OPEN) {
    session.failure(msg.invokeId, STATUS.E_AG_SESSION_ACTIVE, 'session is already open');
    return;
  }
  const meta = { session: session.id, peer: session.peer };
  const { gateway, limits, log, throttle } = session;
  const agreed = negotiateOpen(msg, {
    config: gateway.config, limits, log, throttle, meta, admit: () => gateway.admitSession(session),
  });
  if (agreed.refusal !== undefined) {
    const { status, text, close } = agreed.refusal;
    session.failure(msg.invokeId, status, text);
    if (close !== null) session.end(close);
    return;
  }
  session.opened(agreed, encryptionFor(agreed.sessionKey), msg.invokeId);
  session.log.info('session opened', {
    ...meta, connectInfo: session.connectInfo, version: session.version, idleTimeoutMs: session.idleTimeoutMs, encrypted: session.encrypted,
  });
}

/**
 * docs/protocol.md, encryption: with a session key every tag of QUERY_REQ, QUERY_RESP and
 * FAILURE_CONF is DES-encrypted. {keyCheck, cipher}: both null for a plain session.
 */
function encryptionFor(sessionKey) {
  if (sessionKey === null) return { keyCheck: null, cipher: undefined };
  const keyCheck = new KeyCheck();
  return { keyCheck, cipher: des.createSessionCipher(sessionKey, keyCheck.hooks()) };
}

/**
 * What OPEN_REQ msg gets: {version, connectInfo, idleTimeoutMs, sessionKey (null: plain)}, or
 * {refusal: {status, text, close}} where close is the reason the connection ends (null: it stays).
 * ctx: {config (versions, des and its key), limits, log, throttle, meta (the log line's session
 * and peer), admit() -> null or why the host takes no more sessions}.
 */
function negotiateOpen(msg, ctx) {
  const { config, log, meta } = ctx;
  if (!config.protocol.versions.includes(msg.version)) {
    const n = ctx.throttle.hit('version');
    if (n) log.warn('OPEN_REQ refused: version not supported', { ...meta, version: msg.version, supported: config.protocol.versions, count: n });
    return refused(STATUS.E_AG_INVALID_VERSION, `version ${msg.version} is not supported`, null);
  }
  const key = negotiateKey(msg, ctx);
  if (key.refusal !== undefined) return key;
  const why = ctx.admit();
  if (why) return refused(STATUS.E_AG_HOST_OFFLINE, why, why);
  return {
    version: msg.version, connectInfo: msg.config, idleTimeoutMs: idleTimeoutFor(msg.idleTimeoutMs, ctx), sessionKey: key.sessionKey,
  };
}

const refused = (status, text, close) => ({ refusal: { status, text, close } });

/**
 * OPEN_REQ's Encryption and SESSION_KEY (docs/protocol.md, encryption): {sessionKey} (null for a
 * plain session), or the refusal, which closes the connection.
 */
function negotiateKey(msg, { config, log, meta }) {
  const { desKey, des: desConfig } = config;
  if (msg.encryption === 0) {
    if (!desConfig.require) return { sessionKey: null };
    log.warn('OPEN_REQ refused: this host requires DES encryption (des.require) and the router asked for none', meta);
    return refused(STATUS.E_AG_INVALID_KEY, 'this host requires encryption', 'encryption required');
  }
  if (!desKey) {
    log.warn('OPEN_REQ refused: the router asks for DES encryption and no key is configured (GED145_DES_KEY or des.keyFile)', meta);
    return refused(STATUS.E_AG_INVALID_KEY, 'encryption is not configured on this host', 'encryption requested without a key');
  }
  const sessionKey = des.openSessionKey(desKey, msg.sessionKey);
  if (sessionKey === null) {
    log.warn('OPEN_REQ refused: SESSION_KEY does not decrypt to two equal halves (the router and the host have different private keys?)', meta);
    return refused(STATUS.E_AG_INVALID_KEY, 'session key does not match', 'invalid session key');
  }
  return { sessionKey };
}

/** The router's IdleTimeout when it is in range, else limits.defaultIdleTimeoutMs (logged when the router asked for an odd one). */
function idleTimeoutFor(requested, { limits, log, throttle, meta }) {
  if (requested === 0) return limits.defaultIdleTimeoutMs;
  if (requested >= IDLE_TIMEOUT_RANGE.min && requested <= IDLE_TIMEOUT_RANGE.max) return requested;
  const n = throttle.hit('idle-timeout');
  if (n) {
    log.warn(`OPEN_REQ IdleTimeout ${requested} ms is outside ${IDLE_TIMEOUT_RANGE.min}..${IDLE_TIMEOUT_RANGE.max}; using limits.defaultIdleTimeoutMs`, {
      ...meta, defaultIdleTimeoutMs: limits.defaultIdleTimeoutMs,
    });
  }
  return limits.defaultIdleTimeoutMs;
}

/** No OPEN_REQ within limits.openTimeoutMs (the session's open timer, a module-level handler: no closure per connection). */
function onOpenTimeout(session) {
  session.clearOpenTimer();
  if (!session.reading || session.state !== S.CONNECTED) return;
  session.log.warn(`no OPEN_REQ within ${session.limits.openTimeoutMs} ms; closing the connection`, { session: session.id, peer: session.peer });
  session.destroy('open timeout');
}

module.exports = { openSession, onOpenTimeout };
