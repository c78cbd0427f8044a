'use strict';

// Routes as configured -> routes as the backend runs them. The default contract is POST
// {backend}/query/{subtype} with the query as JSON; a per-subtype route in the config maps a query
// onto any REST call (method, URL template, headers, body template, a JSON or XML answer's
// mapping) or onto a JS module the user names. A URL template is parsed here, once (a body
// template in body.js); backend/request.js fills them in for each query. Each route's cache keys
// start with its fingerprint (fingerprint.js), computed here, once.

const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');
const { ConfigError } = require('../../lib/errors');
const { isPlaceholder } = require('../../lib/query-fields');
const { ROUTE_KIND } = require('../route-kinds');
const { resolveHeaders, compileAuth } = require('./backend');
const { compileBody } = require('./body');
const { compileFormat } = require('../backend/formats');
const { statusMap } = require('../backend/statuses');
const { routeFingerprint, cacheScope } = require('./fingerprint');
const {
  CACHE_DEFAULTS, compileFallback, compileCache, compileBreaker,
} = require('./availability');

/** What an XML route asks for, unless its headers say otherwise: SOAP 1.1's and 1.2's types and plain XML. */
const XML_ACCEPT = 'text/xml, application/soap+xml, application/xml';
/** An XML route's errorPath unless it names one: a SOAP 1.1 fault's text (SOAP 1.2: Envelope.Body.Fault.Reason.Text). */
const SOAP_FAULT_TEXT = 'Envelope.Body.Fault.faultstring';

/** The route's fallback, cache and breaker: its own where it sets them, else the top level's. */
function routeAvailability(route, top) {
  const own = (k) => Object.hasOwn(route, k);
  return {
    fallback: own('fallback') ? compileFallback(route.fallback, 'fallback') : top.fallback,
    cache: own('cache') ? compileCache(route.cache, 'cache', top.cache || CACHE_DEFAULTS) : top.cache,
    breaker: own('breaker') ? compileBreaker(route.breaker, 'breaker', top.breaker) : top.breaker,
  };
}

/**
 * cacheScope: the prefix of the route's cache keys (fingerprint.js), null without a cache; shadow
 * and canary: what it sends to a candidate (null: nothing), defaults filled in.
 */
function withScope(compiled, route, backend, files) {
  compiled.cacheScope = cacheScope(compiled.cache, routeFingerprint(compiled.kind, route, backend, files));
  compiled.shadow = route.shadow === undefined ? null : { candidate: route.shadow.candidate, sample: route.shadow.sample ?? 1 };
  compiled.canary = route.canary === undefined ? null : compileCanary(route.canary);
  return compiled;
}

/** routes.<subtype>.canary with its defaults: the listed DN_STRINGs as a Set, the rollback complete. */
function compileCanary(canary) {
  const rollback = canary.rollback || {};
  return {
    candidate: canary.candidate,
    dialedNumbers: new Set(canary.dialedNumbers || []),
    percent: canary.percent ?? 0,
    rollback: { failureRate: rollback.failureRate ?? 0.05, minQueries: rollback.minQueries ?? 50, windowS: rollback.windowS ?? 60 },
  };
}

/**
 * A candidate (candidates.<name>), compiled as a route is: a REST call, a module, or the default
 * contract at its own base URL (baseUrl; null for the other kinds). What it answers is never
 * cached nor replaced by a fallback (the live route's are what the router gets), so it has neither.
 */
function compileCandidate(candidate, options) {
  const { backend: baseUrl, ...route } = candidate;
  if (baseUrl !== undefined && (route.url !== undefined || route.module !== undefined)) {
    throw new ConfigError('backend: a candidate with a url or a module has no backend URL of its own');
  }
  const compiled = compileRoute({ ...route, fallback: null, cache: null }, options);
  compiled.baseUrl = baseUrl === undefined ? null : baseUrl.replace(/\/+$/, '');
  return compiled;
}

/**
 * One route, as the schema accepted it (schema.js, ROUTE: its kind, its keys, their types), compiled.
 * availability: the top level's, complete (config/index.js compileAvailability); auth: the top
 * level's compiled backend.auth (a route without its own uses it, on backend.url's origins or with
 * backendCredentials: backend/scope.js); env: for ${NAME} in headers and secrets; fresh: load a
 * handler module anew (a reload); sources: {file: text}, the handler modules' text to compile
 * instead of reading their files (what a cluster's primary read, so that every worker runs the
 * same code); backend: the config's backend section as written (what the route's cache
 * fingerprint takes of it).
 */
function compileRoute(route, {
  baseDir, deadlineMs, availability, auth = null, env = process.env, fresh = false, backend = {}, sources = null,
}) {
  // A route may answer sooner than the query deadline, never later.
  const timeoutMs = route.timeoutMs === undefined ? deadlineMs : route.timeoutMs;
  const settings = routeAvailability(route, availability);
  // What the route's answers mean (backend/statuses.js): null where it says nothing of its own.
  const statuses = statusMap(route.statuses);
  if (route.module === undefined && route.url === undefined) {
    // Its own fallback, cache, breaker, statuses or errorPath; the rest is backend's (backend.statuses, backend.errorPath).
    return withScope({
      kind: ROUTE_KIND.CONTRACT, statuses, errorPath: route.errorPath === undefined ? null : route.errorPath, ...settings,
    }, route, backend);
  }
  const ownAuth = Object.hasOwn(route, 'auth');
  const common = {
    timeoutMs: Math.min(timeoutMs, deadlineMs),
    auth: ownAuth ? compileAuth(route.auth, 'auth', { baseDir, env }) : auth,
    ownAuth,
    backendCredentials: route.backendCredentials === true,
    idempotent: route.idempotent !== false,
    statuses,
    errorPath: route.errorPath || 'error',
  };
  if (route.module !== undefined) {
    const file = path.resolve(baseDir, route.module);
    let handler;
    let source;
    try {
      if (fresh || sources !== null) forget(file);
      ({ handler, source } = loadHandler(file, sources !== null && Object.hasOwn(sources, file) ? sources[file] : null));
    } catch (err) {
      // One line: Node's MODULE_NOT_FOUND message goes on with a "Require stack:" list.
      throw new ConfigError(`cannot load module ${file}: ${String(err.message).split('\n')[0]}`, { cause: err });
    }
    if (typeof handler !== 'function' && typeof (handler && handler.handle) !== 'function') {
      throw new ConfigError(`module ${file} must export a function (query, {signal}) or {handle}`);
    }
    const files = [...userGraph(require.resolve(file))];
    return withScope({
      kind: ROUTE_KIND.MODULE,
      handle: typeof handler === 'function' ? handler : handler.handle.bind(handler),
      file,
      source, // the text its entry file was compiled from: what a cluster's workers are sent
      files, // the handler's own files: its errors' stacks name them (backend/user-code.js)
      ...common,
      ...settings,
    }, route, backend, files);
  }
  const template = parseTemplate(route.url);
  const mapping = Object.entries(route.response || {});
  const headers = resolveHeaders(route.headers, 'headers', env, { files: route.headerFiles, baseDir });
  const body = compileBody(route.body, { contentType: headers['content-type'] || null });
  // A route that sends a body template posts it unless it names another method.
  const method = (route.method || (body === null ? 'GET' : 'POST')).toUpperCase();
  if (body !== null && method === 'GET') throw new ConfigError('body: a GET sends no body; give "method": "POST" (or PUT, PATCH)');
  if (body !== null && headers['content-type'] === undefined) headers['content-type'] = body.contentType;
  const xml = route.format === 'xml';
  if (xml && headers.accept === undefined) headers.accept = XML_ACCEPT;
  const errorPath = route.errorPath || (xml ? SOAP_FAULT_TEXT : 'error');
  return withScope({
    kind: ROUTE_KIND.HTTP,
    method,
    template,
    headers: Object.keys(headers).length > 0 ? headers : null,
    ...common,
    mapping: mapping.length > 0 ? mapping : null,
    // The paths the operator wrote say where an XML document starts (its root element: Envelope).
    format: compileFormat(route.format, [...mapping.map(([, p]) => p), ...(route.errorPath ? [route.errorPath] : [])], backend.xml),
    errorPath,
    sendBody: body === null && (route.body === 'query' || (route.body === undefined && method !== 'GET' && method !== 'DELETE')),
    body,
    ...settings,
  }, route, backend);
}

/**
 * A handler module, {handler, source}: its entry file's text, read once (or given: text), compiled
 * as require would compile it, so that the code that runs is the text kept beside it, even when the
 * file is rewritten meanwhile. One already loaded (not forgotten) is taken as it is. Its parent is
 * no module of the gateway's, so that none keeps the handler in its `children` and a reload's old
 * copy is collected once its queries are over.
 */
function loadHandler(file, text = null) {
  const id = require.resolve(file);
  const cached = require.cache[id];
  if (cached !== undefined && text === null) return { handler: cached.exports, source: fs.readFileSync(id, 'utf8') };
  const source = text === null ? fs.readFileSync(id, 'utf8') : text;
  if (path.extname(id) !== '.js' && path.extname(id) !== '.cjs') {
    return { handler: Module.createRequire(id)(id), source }; // .json, a native addon: as require loads them
  }
  const m = new Module(id, null);
  m.filename = id;
  m.paths = Module._nodeModulePaths(path.dirname(id));
  require.cache[id] = m;
  try {
    m._compile(source.charCodeAt(0) === 0xFEFF ? source.slice(1) : source, id); // a BOM, as require drops it
  } catch (err) {
    delete require.cache[id];
    throw err;
  }
  m.loaded = true;
  return { handler: m.exports, source };
}

const OWN = path.resolve(__dirname, '..', '..');
const isUsers = (f) => !f.split(path.sep).includes('node_modules') && !f.startsWith(path.join(OWN, 'gateway')) && !f.startsWith(path.join(OWN, 'lib'));

/** The ids of a loaded module and of the modules it loaded that are the user's (not a package, not the gateway's own). */
function userGraph(id) {
  const seen = new Set();
  const walk = (f) => {
    const m = require.cache[f];
    if (m === undefined || seen.has(f)) return;
    seen.add(f);
    for (const child of m.children) if (isUsers(child.id)) walk(child.id);
  };
  walk(id);
  return seen;
}

/**
 * Drops a handler module, and the modules it loaded that are the user's, from require's cache, so
 * that the next require reads them from disk: a reload after the handler was edited runs the new
 * code. They are taken out of every other module's `children` too (a module loaded before with
 * plain require keeps its children there): once the queries that have the old functions are answered, nothing
 * holds the old copy, and its memory (a table it loaded) is freed.
 */
function forget(file) {
  const ids = userGraph(require.resolve(file));
  if (ids.size === 0) return;
  const gone = new Set();
  for (const id of ids) {
    gone.add(require.cache[id]);
    delete require.cache[id];
  }
  for (const m of Object.values(require.cache)) {
    // Not every entry is a Module: a test runner may put plain objects there (mocha does).
    if (Array.isArray(m.children) && m.children.some((c) => gone.has(c))) m.children = m.children.filter((c) => !gone.has(c));
  }
}

/** Splits a URL template into literal parts and placeholder keys, once, at config load. */
function parseTemplate(template) {
  const m = /^(https?:\/\/[^/?#]+)(.*)$/.exec(template);
  if (!m) throw new ConfigError(`url '${template}' must start with http:// or https:// and a host`);
  const [, origin, rest] = m;
  if (origin.includes('{')) throw new ConfigError('placeholders are allowed in the path and query only, never in the host');
  const parts = [];
  const re = /\{([^{}]+)\}/g;
  let last = 0;
  let match;
  while ((match = re.exec(rest)) !== null) {
    const key = match[1];
    if (!isPlaceholder(key)) {
      throw new ConfigError(`unknown placeholder {${key}}`);
    }
    parts.push(rest.slice(last, match.index), key);
    last = match.index + match[0].length;
  }
  parts.push(rest.slice(last));
  const pathPart = rest === '' ? '/' : rest;
  return { origin, parts: rest === '' ? ['/'] : parts, hasPlaceholders: parts.length > 1, path: pathPart };
}

module.exports = {
  compileRoute, compileCandidate, parseTemplate,
};
