'use strict';

// Gateway configuration: defaults <- JSON file <- environment (GED145_*) <- CLI flags.
// Validated once at start; an error names the bad key (e.g. "limits.maxInFlight must be ...").

const net = require('node:net');
const path = require('node:path');
const { des, resolveProfile, ProfileError } = require('../../lib/protocol');
const { ConfigError } = require('../../lib/errors');
const { readRegularFile, parseJson } = require('../../lib/files');
const { checkLogFile } = require('../../lib/logger');
const { compileRoute, compileCandidate } = require('./routes');
const { routeFingerprint, cacheScope } = require('./fingerprint');
const { compileAllowlist } = require('./allowlist');
const {
  compileListenerTls, compileBackendTls, compileAuth, compileProxy, resolveHeaders, hasCredentials, secretPath,
} = require('./backend');
const { isObject } = require('../objects');
const { ROUTE_KIND } = require('../route-kinds');
const {
  compileFallback, compileCache, compileBreaker, compileRetry, compileHedge,
} = require('./availability');
const {
  SCHEMA, defaultsOf, leaves, publicSchema,
} = require('./schema');
const { schemaProblems } = require('./validate');
const { CompiledConfig } = require('./compiled');

const DEFAULTS = Object.freeze(defaultsOf(SCHEMA));

/** GED145_REDACT and other switches: the usual spellings, any case; anything else is refused. */
function parseBool(v) {
  const t = v.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(t)) return true;
  if (['0', 'false', 'no', 'off'].includes(t)) return false;
  throw new ConfigError('must be 1/0, true/false, yes/no or on/off');
}

function parseNumber(v) {
  if (!/^\s*-?\d+(\.\d+)?\s*$/.test(v)) throw new ConfigError('must be a number');
  return Number(v);
}

/** GED145_* -> [dotted key, parser], from the schema's x-env annotations. */
const ENV = Object.fromEntries([...leaves()].filter(([, n]) => n['x-env']).map(([key, n]) => {
  const types = [].concat(n.type || 'string');
  const parse = types.includes('boolean') ? parseBool : types.includes('integer') || types.includes('number') ? parseNumber : String;
  return [n['x-env'], [key, parse]];
}));

/** Objects whose keys are the user's (subtypes, header names) or whole answers: taken whole, never merged key by key. */
const OPAQUE_KEYS = new Set(['routes', 'candidates', 'headers', 'headerFiles', 'fallback', 'cache', 'auth']);
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
const MAX_KEY_FILE_BYTES = 4096;

/** base with over's values, sections merged key by key; anything else (unknown keys, wrong types) is the schema's to refuse. */
function merge(base, over) {
  const out = { ...base };
  for (const [k, v] of Object.entries(over || {})) {
    if (v === undefined) continue;
    const section = Object.hasOwn(base, k) && isObject(base[k]) && !OPAQUE_KEYS.has(k);
    out[k] = section && isObject(v) ? merge(base[k], v) : v;
  }
  return out;
}

/** An address to bind: an IP address or a host name (localhost, an interface's name in DNS). */
const HOST_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;
const isBindAddress = (h) => typeof h === 'string' && (net.isIP(h) !== 0 || HOST_NAME.test(h));

const CREDENTIALS = 'must not carry a user or password (they would be shown in logs, /health and /metrics): '
  + 'give them to backend.auth ({"type": "basic", ...}), or send them as a header, e.g. "backend": {"headers": {"authorization": "Basic ..."}}';

function setPath(obj, dotted, value) {
  const keys = dotted.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] || (o[k] = {});
  o[keys[keys.length - 1]] = value;
}

/**
 * Every problem of the layered config c, one line each ([] when it can be used): the schema's
 * first, then, when the types are right, what a schema cannot say. sources: dotted key ->
 * "GED145_PORT=70000", for values the environment set. parts: what the checks compiled (the
 * allowlist, the cache and breaker settings) is put there, for compile() to take as it is.
 */
function problemsOf(c, sources = {}, parts = {}) {
  const problems = schemaProblems(c, sources);
  if (problems.length > 0) return problems;
  const check = (cond, key, what) => {
    if (!cond) problems.push(`${key} ${what}${sources[key] ? ` (from ${sources[key]})` : ''}`);
  };
  const attempt = (fn, prefix = '') => {
    try {
      fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...(err.problems || [err.message]).map((p) => `${prefix}${p}`));
    }
  };
  check(!/^[\d.]+$/.test(c.host) || net.isIPv4(c.host), 'host', `'${c.host}' is not a valid IPv4 address`);
  attempt(() => {
    try {
      resolveProfile(c.protocol);
    } catch (err) {
      throw err instanceof ProfileError ? new ConfigError(err.message) : err; // the codec's, said as the loader's
    }
  });
  check(c.deadlineMs < c.routerRequestTimeoutMs, 'deadlineMs',
    `(${c.deadlineMs}) must be below the router's RequestTimeout, routerRequestTimeoutMs (${c.routerRequestTimeoutMs}): `
    + 'a reply after it arrives too late and counts as a missed heartbeat. '
    + "If your router's RequestTimeout is longer, set routerRequestTimeoutMs to it");
  for (const url of c.backend.url === null ? [] : [].concat(c.backend.url)) {
    if (hasCredentials(url)) {
      check(false, 'backend.url', CREDENTIALS);
      continue;
    }
    const bare = /^[^:/]+:\d+$/.test(url) ? ` (did you mean http://${url}?)` : '';
    check(/^https?:\/\/[^/?#]+/.test(url), 'backend.url', `must be an http:// or https:// URL (or a list of them)${bare}`);
    check(!/[?#]/.test(url), 'backend.url',
      'must not have a query string or fragment: the default contract POSTs to {backend.url}/query/{subtype} (use a route for anything else)');
  }
  attempt(() => { parts.allowlist = compileAllowlist(c.allowlist); }, 'allowlist entry ');
  check(isBindAddress(c.admin.host), 'admin.host',
    `must be the address to serve /sessions and /metrics on (127.0.0.1, an internal address), not ${JSON.stringify(c.admin.host)}`);
  check((c.tls.cert === null) === (c.tls.key === null), 'tls', 'needs both cert and key');
  // Without cert and key the listener is plain TCP: a client CA alone would be an operator's ask
  // for verified routers answered with no TLS at all.
  check(c.tls.ca === null || c.tls.cert !== null || c.tls.key !== null, 'tls.ca',
    'needs tls.cert and tls.key: client certificates are checked only on a TLS listener, and without them the gateway would listen in plain TCP');
  for (const [subtype, route] of Object.entries(c.routes)) {
    check(!hasCredentials(route.url), `routes.${subtype}.url`, CREDENTIALS.replace('"backend": {"headers"', `"routes": {"${subtype}": {"headers"`));
  }
  check(c.backend.proxy === null || c.backend.engine === 'undici', 'backend.proxy',
    'needs engine undici (the default): the axios engine reaches backends directly');
  attempt(() => { parts.cache = compileCache(c.cache); });
  attempt(() => { parts.breaker = compileBreaker(c.breaker); });
  attempt(() => { parts.hedge = compileHedge(c.backend.hedge, c.deadlineMs); });
  return problems;
}

/** Throws a ConfigError listing every problem of c; returns what the checks compiled when there is none. */
function validate(c, sources) {
  const parts = {};
  const problems = problemsOf(c, sources, parts);
  if (problems.length > 0) throw new ConfigError(problems);
  return parts;
}

/** availability: the top level's fallback, cache, breaker and retry, complete (a route's own are over these); backend.hedge's. */
function compileAvailability(c, checked, backend) {
  const availability = {
    fallback: compileFallback(c.fallback), cache: checked.cache, breaker: checked.breaker, retry: compileRetry(c.retry),
    hedge: checked.hedge,
  };
  // The cache keys of queries no route names: the default contract's fingerprint.
  availability.cacheScope = cacheScope(availability.cache, routeFingerprint(null, {}, backend));
  return availability;
}

/**
 * The one compile of a validated configuration into a CompiledConfig (compiled.js): routes
 * compiled (handler modules loaded), availability complete, the files and environment the backend
 * and the listener need read, the allowlist as a filter, the DES key read. checked: what the
 * validation compiled already (validate()), taken as it is; a cluster worker, handed settings
 * the primary validated, has none and compiles those parts here. sources: {file: text} of handler
 * modules, compiled instead of their files (a cluster worker compiles what the primary read).
 */
function compile(settings, {
  baseDir, env, fresh = false, configFile = settings.configFile ?? null, checked = null, sources = null,
}) {
  const c = settings;
  const pre = checked || {
    allowlist: compileAllowlist(c.allowlist),
    cache: compileCache(c.cache),
    breaker: compileBreaker(c.breaker),
    hedge: compileHedge(c.backend.hedge, c.deadlineMs),
  };
  const availability = compileAvailability(c, pre, c.backend);
  const problems = [];
  const attempt = (fn, under = null) => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err; // a bug, not a setting: its stack is wanted
      problems.push(...(under === null ? err : err.under(under)).problems);
      return null;
    }
  };
  // Files and the environment the backend needs (config/backend.js); secrets print as [redacted] (secrets.js).
  const backendRuntime = {
    tls: attempt(() => compileBackendTls(c.backend.tls, baseDir)),
    proxy: attempt(() => compileProxy(c.backend.proxy, env)),
    auth: attempt(() => compileAuth(c.backend.auth, 'backend.auth', { baseDir, env })),
    headers: attempt(() => resolveHeaders(c.backend.headers, 'backend.headers', env, { files: c.backend.headerFiles, baseDir })) || {},
  };
  const listenerTls = attempt(() => compileListenerTls(c.tls));
  const routeOptions = {
    baseDir, deadlineMs: c.deadlineMs, availability, auth: backendRuntime.auth, env, fresh, backend: c.backend, sources,
  };
  // name -> compiled, for the routes and the candidates alike; one that fails is reported under its key.
  const compileEach = (section, compile) => {
    const compiled = new Map();
    for (const [name, route] of Object.entries(c[section])) {
      const one = attempt(() => compile(route, routeOptions), `${section}.${name}`);
      if (one !== null) compiled.set(name, one);
    }
    return compiled;
  };
  const compiledRoutes = compileEach('routes', compileRoute);
  const compiledCandidates = compileEach('candidates', compileCandidate);
  for (const [subtype, route] of compiledRoutes) {
    for (const use of ['shadow', 'canary']) {
      const name = route[use] === null ? null : route[use].candidate;
      if (name === null || Object.hasOwn(c.candidates, name)) continue;
      const known = Object.keys(c.candidates);
      const have = known.length === 0 ? 'candidates is empty' : `candidates: ${known.join(', ')}`;
      problems.push(`routes.${subtype}.${use}.candidate: no candidate named '${name}' (${have})`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const desKey = readDesKey(c, baseDir, env);
  if (c.des.require && desKey === null) throw new ConfigError(['des.require is true but no DES key is configured (GED145_DES_KEY or des.keyFile)']);
  return new CompiledConfig(c, {
    compiledRoutes, compiledCandidates, availability, backendRuntime, listenerTls, allowlistFilter: c.allowlist.length > 0 ? pre.allowlist : null, desKey,
  }, { baseDir, configFile });
}

/** GED145_DES_KEY (16 hex digits or 8 ASCII characters), else the file des.keyFile, else null. */
function readDesKey(c, baseDir, env) {
  let text = env.GED145_DES_KEY;
  let from = 'GED145_DES_KEY';
  if ((text === undefined || text === '') && c.des.keyFile) {
    from = c.des.keyFile;
    text = readRegularFile(secretPath(c.des.keyFile, { baseDir, env }), { maxBytes: MAX_KEY_FILE_BYTES, what: 'config: des.keyFile' }).toString('utf8');
    if (text.trim() === '') throw new ConfigError([`des.keyFile: ${c.des.keyFile} is empty (it should hold the key: 16 hex digits or 8 characters)`]);
  }
  if (text === undefined || text === '') return null;
  try {
    return des.parseKey(text);
  } catch (err) {
    throw new ConfigError([`the DES key from ${from} is not usable: ${err.message}`]);
  }
}

/**
 * loadConfig({file, env, overrides, defaults}) -> validated config. `overrides` are CLI flags as
 * dotted keys ({"backend.url": "..."}), applied last; `defaults`, dotted keys too, replace the
 * schema's defaults under everything else (a mode's own: --embedded-backend listens on 127.0.0.1).
 */
function loadConfig({
  file, env = process.env, overrides = {}, defaults = {}, baseDir: dir, fresh = false,
} = {}) {
  let fromFile = {};
  let baseDir = dir || process.cwd();
  if (file) {
    const text = readRegularFile(file, { maxBytes: MAX_CONFIG_BYTES, what: 'config' }).toString('utf8');
    fromFile = parseJson(text, `config: ${file}`);
    if (!isObject(fromFile)) {
      const what = Array.isArray(fromFile) ? 'a list' : JSON.stringify(fromFile);
      throw new ConfigError([`${file} must hold a JSON object ({"backend": {...}, ...}), not ${what}`]);
    }
    if (typeof fromFile.$schema === 'string') delete fromFile.$schema; // for editors (`ged145 config schema`), not a setting
    baseDir = path.dirname(path.resolve(file));
  }
  const layered = {};
  const sources = {};
  for (const [name, [key, conv]] of Object.entries(ENV)) {
    if (env[name] === undefined || env[name] === '') continue;
    try {
      setPath(layered, key, conv(env[name]));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      throw new ConfigError([`${name}=${env[name]}: ${err.problems[0]}`]);
    }
    sources[key] = `${name}=${env[name]}`;
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    setPath(layered, key, value);
    delete sources[key]; // a flag wins over the environment
  }
  const base = structuredClone(DEFAULTS);
  for (const [key, value] of Object.entries(defaults)) setPath(base, key, value);
  const config = merge(merge(base, fromFile), layered);
  const checked = validate(config, sources);
  return compile(config, {
    baseDir, env, fresh, checked, configFile: file ? path.resolve(file) : null, // the file: for the status page
  });
}

/** What a start says when nothing could answer a query: no backend URL and no route of its own. */
const NO_BACKEND = 'no backend configured: give --backend URL (or backend.url in the config), '
  + 'or --embedded-backend to serve from the built-in REST simulator';

/**
 * What a start refuses beyond the configuration's own problems: the things outside it (the log
 * file, the ports) and a gateway with nothing to ask. `ged145 config check` and `ged145 gateway`
 * both call this, so they refuse the same files with the same lines. embeddedBackend: the
 * gateway's --embedded-backend, which stands in for a missing backend.url.
 */
function startProblems(config, { embeddedBackend = false } = {}) {
  const problems = [];
  const ownRoutes = [...config.compiledRoutes.values()].some((r) => r.kind !== ROUTE_KIND.CONTRACT);
  if (config.backend.url === null && !embeddedBackend && !ownRoutes) problems.push(NO_BACKEND);
  if (config.admin.port !== null && config.admin.port !== 0 && config.admin.port === config.port) {
    problems.push(`admin.port (${config.admin.port}) is the GED-145 port too: give the admin port a port of its own`);
  }
  for (const [key, file] of [['log.file', config.log.file], ['decisions.file', config.decisions.file]]) {
    if (!file) continue;
    try {
      checkLogFile(file);
    } catch (err) {
      problems.push(key === 'log.file' ? err.message : err.message.replace(/^log file/, key));
    }
  }
  return problems;
}

/** `ged145 config schema`: the JSON Schema of the config file, for editors ("$schema") and other validators. */
const configSchema = () => publicSchema();

module.exports = {
  loadConfig, compile, startProblems, configSchema, ConfigError, DEFAULTS, ENV_NAMES: Object.keys(ENV),
};
