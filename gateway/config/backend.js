'use strict';

// What the backend needs from outside the config file, read and checked once at load: TLS files
// (the backend's CA, a client certificate), the credentials of backend.auth and of each route's
// auth (from the environment or from files, systemd's $CREDENTIALS_DIRECTORY included), header
// values that name environment variables, and the forward proxy (backend.proxy, else the
// HTTPS_PROXY/HTTP_PROXY/NO_PROXY environment, as curl reads it). A start and `ged145 config
// check` both run this, so a missing file or unset variable is the same one line in both.
// Secrets print as [redacted] (secrets.js) or live in private fields: they reach no log line, /status, /metrics or JSON.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const tls = require('node:tls');
const { ConfigError, OperatorError } = require('../../lib/errors');
const { readRegularFile } = require('../../lib/files');
const { SecretHeaders, ProxySettings, redactedBytes } = require('./secrets');
const { notB64token } = require('../backend/token-text');

const MAX_PEM_BYTES = 1024 * 1024;
const MAX_SECRET_BYTES = 64 * 1024;
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** A URL with a user or password in it: refused, since it would be shown in logs, /health and metrics. */
const hasCredentials = (url) => typeof url === 'string' && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url);

/** A file's bytes, or a ConfigError with the file reader's words (missing, not a file, too big). */
function readFile(file, what, maxBytes) {
  try {
    return readRegularFile(file, { maxBytes, what });
  } catch (err) {
    if (err instanceof OperatorError) throw new ConfigError(err.message);
    throw err;
  }
}

/** A PEM file named by a setting `what` ("backend.tls.ca"): read, and refused unless it holds PEM. */
function readPem(file, what) {
  const pem = readFile(file, what, MAX_PEM_BYTES);
  if (!pem.includes('-----BEGIN ')) throw new ConfigError(`${what}: ${file} is not a PEM file (no -----BEGIN line)`);
  return pem;
}

/** OpenSSL's words for a key and certificate that cannot be used together, as one line. */
function pairProblem(err) {
  if (/key values mismatch/i.test(err.message)) return 'the key does not match the certificate';
  return String(err.message).replace(/^error:[0-9A-F]+:/, '');
}

/** cert + key (+ ca) as one TLS context would take them; what = "backend.tls" or "tls". */
function checkPair(pem, what, files) {
  try {
    tls.createSecureContext(pem);
  } catch (err) {
    throw new ConfigError(`${what}: ${files.cert} and ${files.key} cannot be used: ${pairProblem(err)}`);
  }
}

/**
 * The listener's TLS files (tls.cert, tls.key, tls.ca) as buffers, or null for plain TCP. Paths
 * as given (flags are relative to the working directory).
 */
function compileListenerTls(t) {
  if (t.cert === null) return null;
  const pem = { cert: readPem(t.cert, 'tls.cert'), key: redactedBytes(readPem(t.key, 'tls.key')) };
  if (t.ca !== null) pem.ca = readPem(t.ca, 'tls.ca');
  checkPair({ cert: pem.cert, key: pem.key }, 'tls', t);
  return pem;
}

/**
 * backend.tls -> the connect options every backend connection uses ({secureContext, servername}),
 * or null when nothing is set (the system's CAs, the URL's host). Relative paths are the config
 * file's folder's. The CA is added to Node's own list, never in place of it. One secure context
 * for every connection: given the CAs as PEM instead, each TLS connect parsed the 140-odd of
 * them again, and a burst of new connections missed its deadline doing it.
 */
function compileBackendTls(t, baseDir) {
  if (t.ca === null && t.cert === null && t.key === null && t.servername === null) return null;
  if ((t.cert === null) !== (t.key === null)) throw new ConfigError('backend.tls needs both cert and key (mutual TLS), or neither');
  const file = (f) => path.resolve(baseDir, f);
  const pem = {};
  if (t.ca !== null) pem.ca = [...tls.rootCertificates, readPem(file(t.ca), 'backend.tls.ca').toString('latin1')];
  if (t.cert !== null) {
    pem.cert = readPem(file(t.cert), 'backend.tls.cert');
    pem.key = readPem(file(t.key), 'backend.tls.key');
  }
  let secureContext;
  try {
    secureContext = tls.createSecureContext(pem);
  } catch (err) {
    if (t.cert !== null) throw new ConfigError(`backend.tls: ${t.cert} and ${t.key} cannot be used: ${pairProblem(err)}`);
    throw new ConfigError(`backend.tls.ca: ${t.ca} cannot be used: ${pairProblem(err)}`);
  }
  const out = { secureContext };
  if (t.servername !== null) out.servername = t.servername;
  return out;
}

/** ${NAME} in a value -> the environment's value; an unset variable is a ConfigError naming `where`. */
function expandEnv(value, where, env) {
  return value.replace(ENV_REF, (_, name) => {
    if (env[name] === undefined) throw new ConfigError(`${where} names environment variable ${name}, which is not set`);
    return env[name];
  });
}

/** RFC 9110 section 5.1: a field name is a token. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * What a header value may hold: visible ASCII, space and tab (RFC 9110 section 5.5, without the
 * obs-text that a recipient may read as any charset). A control character or one past U+00FF makes
 * the undici engine refuse every request while axios quietly drops it and sends another value: a
 * value that cannot be sent as written is refused here, once, for both engines.
 */
const NOT_HEADER_VALUE = /[^\t\x20-\x7e]/;

/** null for a value a header can carry, else the first character that is not: code point and place, never the value (a secret). */
function notHeaderValue(value) {
  const i = value.search(NOT_HEADER_VALUE);
  if (i === -1) return null;
  const what = /[\r\n]/.test(value[i]) ? 'a line break' : `U+${value.codePointAt(i).toString(16).toUpperCase().padStart(4, '0')}`;
  return `${what} at character ${i + 1}`;
}

function checkHeaderValue(value, what) {
  const bad = notHeaderValue(value);
  if (bad !== null) throw new ConfigError(`${what} holds ${bad}, which no HTTP header can carry (visible ASCII, space and tab)`);
}

/**
 * Header values may name environment variables as ${NAME}; files: {name: file}, values read from
 * files (secrets: readSecretFile). Names are HTTP tokens, values visible ASCII (NOT_HEADER_VALUE),
 * and no header may come from both.
 */
function resolveHeaders(headers, where, env, { files = null, baseDir = '.' } = {}) {
  const out = {};
  for (const [name, value] of Object.entries(headers || {})) {
    if (typeof value !== 'string') throw new ConfigError(`${where}.${name} must be a string`);
    if (!HEADER_NAME.test(name)) throw new ConfigError(`${where}: ${JSON.stringify(name)} is no header name`);
    checkHeaderValue(value, `${where}.${name}`);
    const v = expandEnv(value, `${where}.${name}`, env);
    checkHeaderValue(v, `${where}.${name}: the environment variable's value`);
    out[name.toLowerCase()] = v;
  }
  const filesWhere = where.replace(/headers$/, 'headerFiles');
  for (const [name, file] of Object.entries(files || {})) {
    if (typeof file !== 'string' || file === '') throw new ConfigError(`${filesWhere}.${name} must be a file name`);
    if (!HEADER_NAME.test(name)) throw new ConfigError(`${filesWhere}: ${JSON.stringify(name)} is no header name`);
    if (Object.hasOwn(out, name.toLowerCase())) throw new ConfigError(`${filesWhere}.${name}: the header is in ${where} too; give it once`);
    const v = readSecretFile(file, `${filesWhere}.${name}`, { baseDir, env });
    checkHeaderValue(v, `${filesWhere}.${name}: the file's line`);
    out[name.toLowerCase()] = v;
  }
  return new SecretHeaders(out);
}

/**
 * A secret setting: `name` (with ${ENV}) or `nameFile`. A relative file is looked up in
 * $CREDENTIALS_DIRECTORY (systemd's LoadCredential=) when that is set, else in the config file's
 * folder. One trailing newline is dropped (echo > file). Never echoed in a problem line.
 */
function readSecret(spec, name, where, { baseDir, env }) {
  const fileKey = `${name}File`;
  const inline = spec[name];
  const file = spec[fileKey];
  if (inline !== undefined && file !== undefined) throw new ConfigError(`${where}: give ${name} or ${fileKey}, not both`);
  if (inline !== undefined) {
    const v = expandEnv(inline, `${where}.${name}`, env);
    if (v === '') throw new ConfigError(`${where}.${name} is empty`);
    return v;
  }
  if (file === undefined) throw new ConfigError(`${where}.${name} (or ${fileKey}) is required for type ${spec.type}`);
  return readSecretFile(file, `${where}.${fileKey}`, { baseDir, env });
}

/**
 * Where a secret file is: a relative name in $CREDENTIALS_DIRECTORY (systemd's LoadCredential=)
 * when it is there, else in baseDir (the config file's folder).
 */
function secretPath(file, { baseDir, env }) {
  const creds = env.CREDENTIALS_DIRECTORY;
  if (!path.isAbsolute(file) && creds && fs.existsSync(path.join(creds, file))) return path.join(creds, file);
  return path.resolve(baseDir, file);
}

/** A one-line secret from a file (secretPath), one trailing newline dropped; `what` names the setting in problem lines. */
function readSecretFile(file, what, { baseDir, env }) {
  const full = secretPath(file, { baseDir, env });
  const text = readFile(full, what, MAX_SECRET_BYTES).toString('utf8').replace(/\r?\n$/, '');
  if (text === '') throw new ConfigError(`${what}: ${full} is empty`);
  if (/[\r\n]/.test(text)) throw new ConfigError(`${what}: ${full} holds more than one line`);
  return text;
}

/**
 * A compiled backend.auth: its settings for /status and logs (toJSON shows no secret) and the
 * secret behind reveal(). `key` is the same for two routes with the same credentials, so that
 * they share one token.
 */
class AuthSpec {
  #secret;

  constructor(settings, secret) {
    this.type = settings.type;
    this.tokenUrl = settings.tokenUrl;
    this.clientId = settings.clientId;
    this.scope = settings.scope;
    this.audience = settings.audience;
    this.clientAuth = settings.clientAuth || 'basic';
    this.username = settings.username;
    this.#secret = secret;
    const digest = crypto.createHash('sha256').update(secret).digest('hex').slice(0, 16);
    this.key = JSON.stringify([this.type, this.tokenUrl, this.clientId, this.scope, this.audience, this.clientAuth, this.username, digest]);
    Object.freeze(this);
  }

  reveal() {
    return this.#secret;
  }

  toJSON() {
    const out = { type: this.type };
    if (this.type === 'oauth2') Object.assign(out, { tokenUrl: this.tokenUrl, clientId: this.clientId, scope: this.scope, audience: this.audience });
    if (this.type === 'basic') out.username = this.username;
    return out;
  }
}

const NEEDS = {
  oauth2: ['tokenUrl', 'clientId'],
  basic: ['username'],
  bearer: [],
};
const SECRET = { oauth2: 'clientSecret', basic: 'password', bearer: 'token' };
const ONLY = {
  oauth2: ['tokenUrl', 'clientId', 'clientSecret', 'clientSecretFile', 'scope', 'audience', 'clientAuth'],
  basic: ['username', 'password', 'passwordFile'],
  bearer: ['token', 'tokenFile'],
};

/** backend.auth or routes.<subtype>.auth -> an AuthSpec, or null for none (null, false). */
function compileAuth(settings, where, ctx) {
  if (settings === null || settings === undefined || settings === false) return null;
  const { type } = settings;
  for (const key of Object.keys(settings)) {
    if (key !== 'type' && !ONLY[type].includes(key)) throw new ConfigError(`${where}.${key} is not a setting of type ${type}`);
  }
  for (const key of NEEDS[type]) {
    if (typeof settings[key] !== 'string' || settings[key] === '') throw new ConfigError(`${where}.${key} is required for type ${type}`);
  }
  if (type === 'oauth2' && !/^https?:\/\/[^/?#]+/.test(settings.tokenUrl)) throw new ConfigError(`${where}.tokenUrl must be an http:// or https:// URL`);
  if (type === 'oauth2' && hasCredentials(settings.tokenUrl)) {
    throw new ConfigError(`${where}.tokenUrl must not carry a user or password`);
  }
  const secret = readSecret(settings, SECRET[type], where, ctx);
  if (/[\r\n]/.test(secret) || (type === 'basic' && /[\r\n:]/.test(settings.username))) throw new ConfigError(`${where}: a credential contains a line break`);
  const notToken = type === 'bearer' ? notB64token(secret) : null;
  if (notToken !== null) throw new ConfigError(`${where}.token is not a bearer token (RFC 6750 b64token): ${notToken}`);
  return new AuthSpec(settings, secret);
}

/**
 * The forward proxy for each origin: backend.proxy for every one, else https_proxy/HTTPS_PROXY for
 * https origins and http_proxy/HTTP_PROXY for http ones; NO_PROXY/no_proxy names hosts to reach
 * directly either way (comma-separated: a host, a domain with or without a leading dot, an
 * optional :port, or * for all). null: no proxy anywhere.
 */
function compileProxy(setting, env) {
  const pick = (...names) => names.map((n) => env[n]).find((v) => v !== undefined && v !== '') || null;
  const forHttps = setting || pick('https_proxy', 'HTTPS_PROXY');
  const forHttp = setting || pick('http_proxy', 'HTTP_PROXY');
  if (forHttps === null && forHttp === null) return null;
  for (const [url, where] of [[forHttps, setting ? 'backend.proxy' : 'HTTPS_PROXY'], [forHttp, setting ? 'backend.proxy' : 'HTTP_PROXY']]) {
    if (url !== null && !/^https?:\/\/[^/?#]+\/?$/.test(url)) throw new ConfigError(`${where} must be an http://host:port proxy URL, not ${JSON.stringify(url)}`);
  }
  const noProxy = (pick('no_proxy', 'NO_PROXY') || '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  return new ProxySettings({
    forHttps, forHttp, noProxy, from: setting ? 'backend.proxy' : 'environment',
  });
}

module.exports = {
  compileListenerTls, compileBackendTls, compileAuth, compileProxy, resolveHeaders, hasCredentials, secretPath,
};
