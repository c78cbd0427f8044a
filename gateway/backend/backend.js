'use strict';

// Turns one QUERY_REQ into one backend call and classifies the result as an outcome (outcome.js:
// ok, app_error, host_error). It never throws: every path ends in one of the three.
//
// The route decides the call: the default contract (a POST to backend.url's base URLs), a REST
// route (its own request, its template filled with the query's values), or a handler module (its
// code, with ctx.request: module-calls.js). Every request goes down the same layers (layers.js):
// the contract's base URLs (Failover), the lane's circuit and pace (Breaker), what the answer
// means (Answer), the credentials and the 401 retry (Auth), the engine (Transport).

const {
  queryJson, fillTemplate, fillBody, encodeSegment,
} = require('./request');
const { createEngine, engineOptions, ACCEPT_ENCODING } = require('./engines');
const { asAbortSignal } = require('./abort');
const { BackendHealth } = require('./health');
const { Breakers } = require('./breakers');
const { LogThrottle } = require('../../lib/log-throttle');
const { PlaceholderError } = require('./errors');
const { appError, hostError, REASON } = require('./outcome');
const { CredentialsBook } = require('./auth');
const { statusMap } = require('./statuses');
const { HandlerFaults, handlerScope, dropScope } = require('./user-code');
const { CredentialScope } = require('./scope');
const { whose } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');
const { ROUTE_KIND } = require('../../lib/route-kinds');
const { OriginFigures } = require('./origin-figures');
const { ModuleCalls, logText } = require('./module-calls');
const {
  compose, Transport, Auth, Answer, Breaker, Failover, Warnings,
} = require('./layers');

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING });

class Backend {
  /**
   * log: where its warnings go (SILENT_LOG where none is wanted); owner: what its diagnostics
   * messages carry as `gateway` (diagnostics.js: the Gateway, the warm-up's private one too);
   * instead: what the router gets while the backend fails, for the health's log line; previous:
   * the Backend this one replaces (a reload): its OAuth2 tokens are taken over, not fetched again;
   * faults: the gateway's record of its handler modules' errors (user-code.js), kept across reloads.
   */
  constructor(config, {
    log = SILENT_LOG, owner = null, instead, previous = null, faults = null,
  } = {}) {
    this.routes = config.compiledRoutes; // a Map: subtypes such as "__proto__" or "constructor" are plain keys
    this.deadlineMs = config.deadlineMs;
    this.log = log;
    this.redact = config.log.redact;
    this.throttle = new LogThrottle();
    const runtime = config.backendRuntime; // {tls, proxy, auth, headers}: config/compiled.js
    this.engine = createEngine(config.backend.engine, { ...engineOptions(config.backend), tls: runtime.tls, proxy: runtime.proxy });
    const targets = baseUrls(config.backend.url);
    // backend.headers and backend.auth go to backend.url's origins only, and to a route that asks for them (scope.js).
    this.scope = new CredentialScope(targets.map((t) => t.origin));
    this.health = new BackendHealth({
      log, instead, previous: previous === null ? null : previous.health, keeps: calledOrigins(targets, this.routes),
    });
    this.baseHeaders = { ...JSON_HEADERS, ...runtime.headers };
    const { availability } = config;
    this.retry = availability.retry;
    this.breakers = breakersFor(this.routes, availability.breaker, config.backend, { log, owner, health: this.health });
    // What a status means for the default contract (statuses.js): backend.statuses and errorPath, or a contract route's own.
    this.contract = { statuses: statusMap(config.backend.statuses), errorPath: config.backend.errorPath || 'error', mapping: null };
    this.contractSpecs = contractSpecs(this.routes, this.contract);
    this.credentials = new CredentialsBook({ engine: this.engine, log, owner });
    this.auth = this.routeCredentials(runtime, targets, previous === null ? null : previous.credentials);
    this.figures = new OriginFigures(owner); // per origin, for /status
    // Each module route's scope: what its escaped errors are attributed to (user-code.js).
    this.faults = faults || new HandlerFaults({ log, owner });
    this.scopes = new Map(); // compiled route -> scope
    for (const [subtype, route] of this.routes) {
      if (route.kind === ROUTE_KIND.MODULE) this.scopes.set(route, handlerScope(subtype, route, this.faults, this.redact));
    }
    this.modules = new ModuleCalls(this);
    const warnings = new Warnings(log);
    this.send = compose(
      new Transport(this.engine, {
        owner, figures: this.figures, warnings, deadlineMs: this.deadlineMs,
      }),
      [Auth, { retry: this.retry, figures: this.figures }],
      [Answer, { figures: this.figures, warnings, instead: this.health.instead }],
      [Breaker, this.breakers],
    );
    this.sendContract = targets.length === 0 ? null : new Failover(this.send, {
      targets, strategy: config.backend.strategy, retry: this.retry, breakers: this.breakers, log,
    });
  }

  /**
   * The credentials (auth.js) each route's requests carry: one per distinct backend.auth /
   * routes.<subtype>.auth, shared by the routes that name the same, taken over from the previous
   * backend's book where it had them; and the headers. A REST route's are whole: {headers, auth};
   * a module's, its own auth (undefined: none of its own). Returns backend.auth's (null: none).
   */
  routeCredentials(runtime, targets, previous) {
    const book = this.credentials;
    // backend.auth is fetched (a token) only when some request may carry it.
    const routeList = [...this.routes.values()].filter((r) => r.kind !== ROUTE_KIND.CONTRACT);
    const used = targets.length > 0 || routeList.some((r) => r.backendCredentials && !r.ownAuth);
    const auth = used ? book.for(runtime.auth, previous) : null;
    this.routeSend = new Map(); // compiled route -> {headers, auth}
    const bare = [];
    for (const route of routeList) {
      const own = route.ownAuth ? book.for(route.auth, previous) : undefined;
      if (route.kind === ROUTE_KIND.MODULE) {
        this.routeSend.set(route, { headers: null, auth: own });
        continue;
      }
      const trusted = route.backendCredentials || this.scope.includes(route.template.origin);
      const headers = trusted ? this.baseHeaders : JSON_HEADERS;
      this.routeSend.set(route, {
        headers: route.headers === null ? headers : { ...headers, ...route.headers },
        auth: own !== undefined ? own : trusted ? auth : null,
      });
      if (!trusted && own === undefined && route.headers === null) bare.push(route.template.origin);
    }
    if (bare.length > 0 && (runtime.auth !== null || Object.keys(runtime.headers).length > 0)) {
      this.log.warn(`backend.headers and backend.auth go to backend.url's origins only: ${[...new Set(bare)].join(', ')} get neither. `
        + 'A route whose API needs them sets "backendCredentials": true (or its own "auth" or "headers")');
    }
    return auth;
  }

  /** The credentials a module route's ctx.request to origin carries: its own, else backend.auth where it goes (scope.js), else none. */
  credentialsFor(route, origin) {
    const { auth } = this.routeSend.get(route);
    if (auth !== undefined) return auth;
    return route.backendCredentials || this.scope.includes(origin) ? this.auth : null;
  }

  /** The headers a module route's ctx.request to origin starts from: backend.headers where they go (scope.js). */
  headersFor(route, origin) {
    return route.backendCredentials || this.scope.includes(origin) ? this.baseHeaders : JSON_HEADERS;
  }

  /**
   * A promise of one backend outcome for q (see the top of this file). deadlineAt
   * (performance.now() time): when the query's deadline runs out, so that a retry is tried only
   * while enough of it is left. The request is built before anything is awaited, so that a
   * placeholder refused is known at once; the path from here to the engine is plain promises,
   * one continuation per layer that has something to do with the answer (docs/performance.md).
   */
  call(q, signal, deadlineAt = Infinity) {
    const route = q.subtype === undefined ? undefined : this.routes.get(q.subtype);
    try {
      if (route === undefined || route.kind === ROUTE_KIND.CONTRACT) return this.callContract(q, signal, deadlineAt);
      if (route.kind === ROUTE_KIND.MODULE) return this.modules.call(route, q, signal, deadlineAt);
      return this.callRoute(route, q, signal, deadlineAt);
    } catch (err) {
      if (!(err instanceof PlaceholderError)) return Promise.reject(err);
      const n = this.throttle.hit('placeholder');
      if (n) this.log.warn(`query refused before the backend: ${err.message}`, { subtype: logText(q.subtype), invokeId: q.invokeId, count: n });
      return Promise.resolve(appError(err.message, REASON.BAD_PLACEHOLDER));
    }
  }

  /** The default contract: a POST of the query to /query/<subtype> below each base URL, in the order Failover gives them. */
  callContract(q, signal, deadlineAt) {
    if (this.sendContract === null) return Promise.resolve(hostError(REASON.NO_BACKEND, 'no backend configured'));
    const withSubtype = q.subtype !== undefined;
    const request = {
      origin: null,
      path: withSubtype ? `/query/${encodeSegment('subtype', q.subtype)}` : '/query',
      method: 'POST',
      headers: this.baseHeaders,
      body: JSON.stringify(queryJson(q)),
      signal,
      group: signal.group,
      spec: this.contractSpecs.size === 0 || !withSubtype ? this.contract : this.contractSpecs.get(q.subtype) || this.contract,
      forHandler: false,
      credentials: this.auth,
      deadlineAt,
      timeoutMs: undefined,
      elsewhere: false,
    };
    whose(request, q, withSubtype ? '/query/{subtype}' : '/query', 1);
    return this.sendContract.dispatch(request);
  }

  /** A REST route's request: its template filled, its body; sent down the layers once (routes.<subtype>.timeoutMs: it gives up sooner). */
  callRoute(route, q, signal, deadlineAt) {
    const { headers, auth } = this.routeSend.get(route);
    const request = {
      origin: route.template.origin,
      path: fillTemplate(route.template, q),
      method: route.method,
      headers,
      body: route.body !== null ? fillBody(route.body, q) : route.sendBody ? JSON.stringify(queryJson(q)) : undefined,
      signal,
      idempotent: route.idempotent,
      group: signal.group,
      spec: route,
      forHandler: false,
      credentials: auth,
      deadlineAt,
      timeoutMs: undefined,
      elsewhere: false,
    };
    whose(request, q, route.template.path, 1);
    if (route.timeoutMs >= this.deadlineMs) return this.send.dispatch(request);
    request.signal = AbortSignal.any([asAbortSignal(signal), AbortSignal.timeout(route.timeoutMs)]);
    request.timeoutMs = route.timeoutMs;
    return this.send.dispatch(request).then((outcome) => {
      if (outcome.reason === REASON.TIMEOUT) return hostError(REASON.TIMEOUT, `backend did not answer within ${route.timeoutMs} ms (the route's timeoutMs)`);
      return outcome;
    });
  }

  /** Why queries cannot reach the backend now (for /ready), or null. */
  notReady() {
    return this.credentials.notReady();
  }

  /** Per origin: its figures and its health (its state, and each route's: health.js); the credentials' state. */
  toJSON() {
    return { origins: this.figures.toJSON(this.health.originsJSON()), auth: this.credentials.toJSON() };
  }

  close() {
    for (const scope of this.scopes.values()) dropScope(scope);
    this.health.close(); // circuits hold no timers: a probe goes when a call asks for one
    this.credentials.close();
    return this.engine.close();
  }
}

/** The default contract's base URL(s) (gateway/config/index.js refuses a query string or fragment) -> [{origin, basePath}]. */
function baseUrls(url) {
  return (url === null || url === undefined ? [] : [].concat(url)).map((u) => {
    const m = /^(https?:\/\/[^/?#]+)(\/[^?#]*)?/.exec(u);
    return { origin: m[1], basePath: (m[2] || '').replace(/\/+$/, '') };
  });
}

/** Whether the backend calls an origin: a reload keeps what the queries found of those (/health and ged145_backend_up say the same). */
function calledOrigins(targets, routes) {
  const called = new Set(targets.map((t) => t.origin));
  for (const route of routes.values()) if (route.template !== undefined) called.add(route.template.origin);
  return (origin) => called.has(origin);
}

/** One circuit per route per origin; a route's breaker settings are its own (null: off for it). */
function breakersFor(routes, breaker, backend, { log, owner, health }) {
  return new Breakers(breaker, {
    log,
    owner,
    settingsFor: (subtype) => {
      const route = subtype === undefined ? undefined : routes.get(subtype);
      return route === undefined || route.breaker === undefined ? breaker : route.breaker;
    },
    known: (subtype) => routes.has(subtype),
    pacing: { retryAfter: backend.retryAfter, adaptiveRate: backend.adaptiveRate },
    health,
  });
}

/** subtype -> a contract route's own {statuses, errorPath, mapping}, where it has either. */
function contractSpecs(routes, contract) {
  const specs = new Map();
  for (const [subtype, route] of routes) {
    if (route.kind !== ROUTE_KIND.CONTRACT || (route.statuses === null && route.errorPath === null)) continue;
    specs.set(subtype, {
      statuses: route.statuses === null ? contract.statuses : route.statuses,
      errorPath: route.errorPath === null ? contract.errorPath : route.errorPath,
      mapping: null,
    });
  }
  return specs;
}

module.exports = { Backend };
