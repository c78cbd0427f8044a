'use strict';

// Gateway configuration: defaults <- JSON file <- environment (GED145_*) <- CLI flags.
// Validated once at start; an error names the bad key (e.g. "limits.maxInFlight must be ...").

const net = require('node:net');
const path = require('node:path');
const {
  DEFAULT_MAX_MESSAGE_LENGTH, des, MESSAGE_TYPES, STATUS, profile: { resolveProfile },
} = require('../../lib/protocol');
const { OperatorError } = require('../../lib/errors');
const { readRegularFile, parseJson } = require('../../lib/files');
const { closest } = require('../../lib/closest');
const { compileRoute } = require('./routes');
const { compileAllowlist } = require('./allowlist');
const { isObject } = require('../../lib/objects');
const {
  BREAKER_DEFAULTS, RETIRED_BREAKER_KEYS, RETRY_DEFAULTS, compileFallback, compileCache, compileBreaker, compileRetry,
} = require('./availability');
const { ENGINE_NAMES } = require('../backend/engines');
const { V8_MAX_SEMI_SPACE_MB } = require('../../lib/heap');

const DEFAULTS = Object.freeze({
  host: '0.0.0.0',
  port: 5000,
  // The protocol compatibility profile (docs/protocol.md): versions accepted in OPEN_REQ, and the
  // message type numbers and status codes on the wire, our values by default.
  protocol: {
    versions: [2],
    messageTypes: { ...MESSAGE_TYPES },
    status: { ...STATUS },
  },
  deadlineMs: 250,
  routerRequestTimeoutMs: 300, // the router's RequestTimeout: deadlineMs must stay below it
  duplicates: 'forward', // or 'answer-empty': QUERY_RESP with no tags, backend not called
  backend: {
    url: null, // base URL of the default query contract, or a list of them; null with `npm start` = embedded rest-sim
    strategy: 'failover', // with several URLs: 'failover' (in order) or 'balance' (round robin)
    engine: 'undici', // or 'axios'
    connections: 64,
    headers: {},
    maxResponseBytes: 64 * 1024,
  },
  routes: {},
  fallback: null, // an answer for when the backend fails (docs/configuration.md, availability)
  cache: null, // {ttlMs, staleIfErrorMs, maxEntries, key, store}; null = off
  breaker: { ...BREAKER_DEFAULTS }, // per backend origin
  retry: { ...RETRY_DEFAULTS }, // a request that surely never reached the backend is tried again, on another origin
  limits: {
    maxMessageLength: DEFAULT_MAX_MESSAGE_LENGTH,
    maxInFlight: 1000, // per session; queries past it wait, in order, until replies free a slot
    maxQueuedBytes: 1024 * 1024, // per session; requests waiting past maxInFlight; past it the socket stops being read
    maxOutboundBytes: 1024 * 1024, // per session; a router that stops reading is disconnected past it
    maxSessions: 64, // open sessions; past it OPEN_REQ gets E_AG_HOST_OFFLINE
    maxConnections: 2048, // TCP connections; past it a connection is closed at once
    openTimeoutMs: 15_000, // a connection must send OPEN_REQ within this
    partialFrameTimeoutMs: 10_000, // a started frame must complete within this
    defaultIdleTimeoutMs: 60_000, // used when OPEN_REQ.IdleTimeout is 0 or out of range
    closeLingerMs: 2000, // after our FIN, how long we read and discard while waiting for the router's
    maxSubtypeLabels: 50, // metrics: distinct subtype labels besides configured routes; the rest are "(other)"
  },
  allowlist: [], // router addresses; empty = any
  admin: { host: '127.0.0.1', port: 8080 }, // port null = no admin listener
  log: {
    level: 'info', file: null, redact: false, console: true, traceFrames: 0,
  },
  workers: 1,
  shutdownTimeoutMs: 5000,
  // V8 heap sizing the gateway sets for itself at start (lib/heap.js); read once, not on reload.
  memory: { youngGenerationMb: 8, heapGrowthPercent: 50 }, // why 8: docs/configuration.md
  warmup: true, // run synthetic queries through the code before listening (see gateway/ops/warmup.js)
  des: { keyFile: null, require: false }, // the DES private key: GED145_DES_KEY, or a file holding it; never logged
  tls: { cert: null, key: null, ca: null }, // PEM files: listen with TLS; ca = require client certificates
});

/** GED145_REDACT and other switches: the usual spellings, any case; anything else is refused. */
function parseBool(v) {
  const t = v.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(t)) return true;
  if (['0', 'false', 'no', 'off'].includes(t)) return false;
  throw new Error('must be 1/0, true/false, yes/no or on/off');
}

function parseNumber(v) {
  if (!/^\s*-?\d+(\.\d+)?\s*$/.test(v)) throw new Error('must be a number');
  return Number(v);
}

const ENV = {
  GED145_HOST: ['host', String],
  GED145_PORT: ['port', parseNumber],
  GED145_BACKEND_URL: ['backend.url', String],
  GED145_ENGINE: ['backend.engine', String],
  GED145_DEADLINE_MS: ['deadlineMs', parseNumber],
  GED145_ADMIN_PORT: ['admin.port', parseNumber],
  GED145_LOG_LEVEL: ['log.level', String],
  GED145_LOG_FILE: ['log.file', String],
  GED145_REDACT: ['log.redact', parseBool],
  GED145_WORKERS: ['workers', parseNumber],
  GED145_DES_KEY_FILE: ['des.keyFile', String],
  GED145_WARMUP: ['warmup', parseBool],
};

/** Objects whose keys are the user's (subtypes, header names): taken whole, never merged key by key. */
const OPAQUE_KEYS = new Set(['routes', 'headers', 'fallback', 'cache']);
/** Sections that may also be switched off with false or null (docs/configuration.md). */
const SWITCHABLE = new Set(['breaker']);
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
/** Keys an earlier version took, and what replaced them. */
const RETIRED_KEYS = Object.freeze(Object.fromEntries(Object.entries(RETIRED_BREAKER_KEYS).map(([k, why]) => [`breaker.${k}`, why])));
const MAX_KEY_FILE_BYTES = 4096;

function merge(base, over, prefix = '') {
  const out = { ...base };
  for (const [k, v] of Object.entries(over || {})) {
    if (v === undefined) continue;
    if (!Object.hasOwn(base, k)) {
      if (Object.hasOwn(RETIRED_KEYS, `${prefix}${k}`)) throw new OperatorError(`config: ${prefix}${k} is gone: ${RETIRED_KEYS[`${prefix}${k}`]}`);
      const guess = closest(k, Object.keys(base));
      throw new OperatorError(`config: unknown key '${prefix}${k}'${guess ? ` (did you mean '${prefix}${guess}'?)` : ''}`);
    }
    const section = isObject(base[k]) && !OPAQUE_KEYS.has(k);
    if (section && !isObject(v) && !(SWITCHABLE.has(k) && (v === null || v === false))) {
      throw new OperatorError(`config: ${prefix}${k} must be an object of settings, not ${v === null ? 'null' : JSON.stringify(v)}`);
    }
    out[k] = section && isObject(v) ? merge(base[k], v, `${prefix}${k}.`) : v;
  }
  return out;
}

/** An address to bind: an IP address or a host name (localhost, an interface's name in DNS). */
const HOST_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;
const isBindAddress = (h) => typeof h === 'string' && (net.isIP(h) !== 0 || HOST_NAME.test(h));

/** A URL with a user or password in it: refused, since it would be shown in logs, /health and metrics. */
const hasCredentials = (url) => typeof url === 'string' && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url);
const CREDENTIALS = 'must not carry a user or password (they would be shown in logs, /health and /metrics): '
  + 'send them as a header instead, e.g. "backend": {"headers": {"authorization": "Basic ..."}}';

function setPath(obj, dotted, value) {
  const keys = dotted.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] || (o[k] = {});
  o[keys[keys.length - 1]] = value;
}

/** Where each key set by the environment came from ("GED145_PORT=abc"), so an error can say. */
let sources = {};

function check(cond, key, what) {
  if (!cond) throw new OperatorError(`config: ${key} ${what}${sources[key] ? ` (from ${sources[key]})` : ''}`);
}

const intIn = (v, min, max) => Number.isInteger(v) && v >= min && v <= max;

/**
 * The range of each limit (docs/configuration.md). Timers stay far below setTimeout's 2^31-1 ms,
 * past which Node fires them after 1 ms.
 */
const LIMIT_RANGES = Object.freeze({
  maxMessageLength: [1024, 1024 * 1024], // room for any FAILURE_CONF (265 bytes) and a real QUERY_REQ
  maxInFlight: [1, 100_000],
  maxOutboundBytes: [4096, 1024 * 1024 * 1024],
  maxQueuedBytes: [0, 1024 * 1024 * 1024],
  maxSessions: [1, 10_000],
  maxConnections: [1, 100_000],
  openTimeoutMs: [100, 600_000],
  partialFrameTimeoutMs: [100, 600_000],
  defaultIdleTimeoutMs: [1000, 24 * 60 * 60 * 1000],
  closeLingerMs: [0, 60_000],
  maxSubtypeLabels: [0, 1000],
});

/** Checks every setting of the layered config c; throws an OperatorError naming the first bad key. */
function validate(c) {
  check(typeof c.host === 'string' && c.host.length > 0, 'host', 'must be an address');
  check(!/^[\d.]+$/.test(c.host) || net.isIPv4(c.host), 'host', `'${c.host}' is not a valid IPv4 address`);
  check(intIn(c.port, 0, 65535), 'port', 'must be a port number 0..65535');
  check(Array.isArray(c.protocol.versions) && c.protocol.versions.length > 0 && c.protocol.versions.every((v) => intIn(v, 0, 0xffffffff)),
    'protocol.versions', 'must be a non-empty list of version numbers');
  try {
    resolveProfile(c.protocol);
  } catch (err) {
    throw new OperatorError(`config: ${err.message}`);
  }
  check(intIn(c.deadlineMs, 1, 60_000), 'deadlineMs', 'must be an integer of milliseconds from 1 to 60000');
  check(intIn(c.routerRequestTimeoutMs, 1, 600_000), 'routerRequestTimeoutMs', 'must be an integer of milliseconds from 1 to 600000');
  check(c.deadlineMs < c.routerRequestTimeoutMs, 'deadlineMs',
    `(${c.deadlineMs}) must be below the router's RequestTimeout, routerRequestTimeoutMs (${c.routerRequestTimeoutMs}): `
    + 'a reply after it arrives too late and counts as a missed heartbeat. '
    + "If your router's RequestTimeout is longer, set routerRequestTimeoutMs to it");
  check(['forward', 'answer-empty'].includes(c.duplicates), 'duplicates', "must be 'forward' or 'answer-empty'");
  const urls = c.backend.url === null ? [] : [].concat(c.backend.url);
  check(Array.isArray(c.backend.url) ? c.backend.url.length > 0 : true, 'backend.url', 'must be a URL or a non-empty list of URLs');
  for (const url of urls) {
    check(!hasCredentials(url), 'backend.url', CREDENTIALS);
    const bare = typeof url === 'string' && /^[^:/]+:\d+$/.test(url) ? ` (did you mean http://${url}?)` : '';
    check(typeof url === 'string' && /^https?:\/\/[^/?#]+/.test(url), 'backend.url', `must be an http:// or https:// URL (or a list of them)${bare}`);
    check(!/[?#]/.test(url), 'backend.url',
      'must not have a query string or fragment: the default contract POSTs to {backend.url}/query/{subtype} (use a route for anything else)');
  }
  check(['failover', 'balance'].includes(c.backend.strategy), 'backend.strategy', "must be 'failover' or 'balance'");
  check(ENGINE_NAMES.includes(c.backend.engine), 'backend.engine', `must be one of ${ENGINE_NAMES.join(', ')}`);
  check(intIn(c.backend.connections, 1, 10_000), 'backend.connections', 'must be an integer from 1 to 10000');
  check(intIn(c.backend.maxResponseBytes, 1, 64 * 1024 * 1024), 'backend.maxResponseBytes', 'must be a positive integer');
  check(isObject(c.backend.headers), 'backend.headers', 'must be an object');
  for (const [k, [min, max]] of Object.entries(LIMIT_RANGES)) {
    check(intIn(c.limits[k], min, max), `limits.${k}`, `must be an integer from ${min} to ${max}`);
  }
  check(intIn(c.shutdownTimeoutMs, 0, 600_000), 'shutdownTimeoutMs', 'must be an integer from 0 to 600000 (milliseconds)');
  check(Array.isArray(c.allowlist), 'allowlist', 'must be a list of addresses and CIDR ranges');
  try {
    compileAllowlist(c.allowlist);
  } catch (err) {
    check(false, 'allowlist', `entry ${err.message}`);
  }
  check(c.admin.port === null || intIn(c.admin.port, 0, 65535), 'admin.port', 'must be a port number or null');
  check(isBindAddress(c.admin.host), 'admin.host',
    `must be the address to serve /sessions and /metrics on (127.0.0.1, an internal address), not ${JSON.stringify(c.admin.host)}`);
  check(['error', 'warn', 'info', 'debug'].includes(c.log.level), 'log.level', 'must be error, warn, info or debug');
  check(typeof c.log.redact === 'boolean', 'log.redact', 'must be true or false');
  check(typeof c.log.console === 'boolean', 'log.console', 'must be true or false');
  check(intIn(c.log.traceFrames, 0, 100_000), 'log.traceFrames', 'must be an integer from 0 to 100000');
  check(c.log.file === null || (typeof c.log.file === 'string' && c.log.file.length > 0), 'log.file', 'must be a file path or null');
  check(intIn(c.workers, 1, 64), 'workers', 'must be an integer from 1 to 64');
  check(typeof c.warmup === 'boolean', 'warmup', 'must be true or false');
  check(intIn(c.memory.youngGenerationMb, 1, V8_MAX_SEMI_SPACE_MB), 'memory.youngGenerationMb', `must be an integer from 1 to ${V8_MAX_SEMI_SPACE_MB} (MB)`);
  check(intIn(c.memory.heapGrowthPercent, 0, 1000), 'memory.heapGrowthPercent', 'must be an integer from 0 (V8 decides) to 1000');
  check(c.des.keyFile === null || typeof c.des.keyFile === 'string', 'des.keyFile', 'must be a file path or null');
  check(typeof c.des.require === 'boolean', 'des.require', 'must be true or false');
  for (const k of ['cert', 'key', 'ca']) check(c.tls[k] === null || typeof c.tls[k] === 'string', `tls.${k}`, 'must be a file path or null');
  check((c.tls.cert === null) === (c.tls.key === null), 'tls', 'needs both cert and key');
  check(isObject(c.routes), 'routes', 'must be an object of subtype -> route');
  for (const [subtype, route] of Object.entries(c.routes)) {
    if (!isObject(route)) continue;
    check(!hasCredentials(route.url), `routes.${subtype}.url`, CREDENTIALS.replace('"backend": {"headers"', `"routes": {"${subtype}": {"headers"`));
  }
  for (const [key, compile] of [['fallback', compileFallback], ['cache', compileCache], ['breaker', compileBreaker], ['retry', compileRetry]]) {
    try {
      compile(c[key], key);
    } catch (err) {
      throw new OperatorError(`config: ${err.message}`);
    }
  }
  return c;
}

/**
 * The parts of a validated config that are not plain data: routes compiled (handler modules
 * loaded), the allowlist as a filter, the DES key read. A cluster worker receives the validated
 * settings as JSON and runs only this (gateway/ops/cluster.js).
 */
function compileConfig(settings, { baseDir, env }) {
  const c = { ...settings };
  delete c.compiledRoutes; // a Map does not survive JSON: compiled again below
  const availability = {
    fallback: compileFallback(c.fallback), cache: compileCache(c.cache), breaker: compileBreaker(c.breaker), retry: compileRetry(c.retry),
  };
  const routes = new Map(); // subtype -> compiled route; a Map, so "__proto__" is a subtype like any other
  for (const [subtype, route] of Object.entries(c.routes)) {
    try {
      routes.set(subtype, compileRoute(route, { baseDir, deadlineMs: c.deadlineMs, availability }));
    } catch (err) {
      throw new OperatorError(`config: routes.${subtype}: ${err.message}`, { cause: err });
    }
  }
  const out = { ...c, compiledRoutes: routes, baseDir };
  Object.defineProperty(out, 'availability', { value: availability, enumerable: false });
  Object.defineProperty(out, 'allowlistFilter', { value: c.allowlist.length > 0 ? compileAllowlist(c.allowlist) : null, enumerable: false });
  // The parsed key rides along non-enumerable: it never reaches a log line, /sessions or JSON.
  const desKey = readDesKey(c, baseDir, env);
  check(!c.des.require || desKey !== null, 'des.require', 'is true but no DES key is configured (GED145_DES_KEY or des.keyFile)');
  Object.defineProperty(out, 'desKey', { value: desKey, enumerable: false });
  return out;
}

/** GED145_DES_KEY (16 hex digits or 8 ASCII characters), else the file des.keyFile, else null. */
function readDesKey(c, baseDir, env) {
  let text = env.GED145_DES_KEY;
  let from = 'GED145_DES_KEY';
  if ((text === undefined || text === '') && c.des.keyFile) {
    from = c.des.keyFile;
    text = readRegularFile(path.resolve(baseDir, c.des.keyFile), { maxBytes: MAX_KEY_FILE_BYTES, what: 'config: des.keyFile' }).toString('utf8');
    if (text.trim() === '') throw new OperatorError(`config: des.keyFile: ${c.des.keyFile} is empty (it should hold the key: 16 hex digits or 8 characters)`);
  }
  if (text === undefined || text === '') return null;
  try {
    return des.parseKey(text);
  } catch (err) {
    throw new OperatorError(`config: the DES key from ${from} is not usable: ${err.message}`);
  }
}

/**
 * loadConfig({file, env, overrides}) -> validated config. `overrides` are CLI flags as dotted
 * keys ({"backend.url": "..."}), applied last.
 */
function loadConfig({ file, env = process.env, overrides = {}, baseDir: dir } = {}) {
  let fromFile = {};
  let baseDir = dir || process.cwd();
  if (file) {
    const text = readRegularFile(file, { maxBytes: MAX_CONFIG_BYTES, what: 'config' }).toString('utf8');
    fromFile = parseJson(text, `config: ${file}`);
    if (!isObject(fromFile)) {
      const what = Array.isArray(fromFile) ? 'a list' : JSON.stringify(fromFile);
      throw new OperatorError(`config: ${file} must hold a JSON object ({"backend": {...}, ...}), not ${what}`);
    }
    baseDir = path.dirname(path.resolve(file));
  }
  const layered = {};
  sources = {};
  for (const [name, [key, conv]] of Object.entries(ENV)) {
    if (env[name] === undefined || env[name] === '') continue;
    try {
      setPath(layered, key, conv(env[name]));
    } catch (err) {
      throw new OperatorError(`config: ${name}=${env[name]}: ${err.message}`);
    }
    sources[key] = `${name}=${env[name]}`;
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    setPath(layered, key, value);
    delete sources[key]; // a flag wins over the environment
  }
  try {
    const config = merge(merge(structuredClone(DEFAULTS), fromFile), layered);
    return compileConfig(validate(config), { baseDir, env });
  } finally {
    sources = {};
  }
}

module.exports = {
  loadConfig, compileConfig, DEFAULTS, OPAQUE_KEYS, LIMIT_RANGES, ENV_NAMES: Object.keys(ENV),
};
