'use strict';

// The query's route turns it into its request (or, for a handler module, into the handler's
// call): the default contract (a POST of the query below backend.url's base URLs, which Failover
// picks), a REST route (its template filled with the query's values, its body, its credentials),
// or a handler module (module-calls.js, whose ctx.request goes down the same layers). A route's
// own timeoutMs is applied here: it gives up sooner than the query's deadline. A placeholder the
// router filled with an unusable value is refused before anything is sent (app_error). A request
// made for shadow traffic says so (ctx.kind 'shadow'): the live backend's figures do not count it.

const {
  queryJson, fillTemplate, fillBody, encodeSegment,
} = require('../request');
const { asAbortSignal } = require('../abort');
const { PlaceholderError } = require('../errors');
const { appError, hostError, REASON } = require('../outcome');
const { ModuleCalls, logText } = require('../module-calls');
const { LogThrottle } = require('../../log-throttle');
const { ACCEPT_ENCODING } = require('../engines');
const { ROUTE_KIND } = require('../../route-kinds');

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING });

class Route {
  /**
   * routes: the compiled routes (a Map by subtype); contract: {statuses, errorPath, mapping} of
   * the default contract; hasContract: backend.url is set; target: its one base URL
   * {origin, basePath} when it has one (the request is made for it here, Failover has nothing to
   * choose), else null; headers: backend.headers (runtime);
   * authConfigured: backend.auth is set; auth: the credentials its requests carry (null: none,
   * or none needed); scope: where those go
   * (scope.js); book: the CredentialsBook a route's own auth comes from; previous: the replaced
   * backend's book, whose tokens are taken over; deadlineMs, log, redact; faults and scopes: the
   * handler modules' (user-code.js).
   */
  constructor(next, {
    routes, contract, hasContract, target, headers, authConfigured, auth, scope, book, previous, deadlineMs, log, redact, faults, scopes,
  }) {
    this.next = next;
    this.routes = routes; // a Map: subtypes such as "__proto__" or "constructor" are plain keys
    this.contract = contract;
    this.contractSpecs = contractSpecs(routes, contract);
    this.hasContract = hasContract;
    this.target = target;
    this.baseHeaders = { ...JSON_HEADERS, ...headers };
    this.auth = auth;
    this.scope = scope;
    this.deadlineMs = deadlineMs;
    this.log = log;
    this.throttle = new LogThrottle();
    this.sendAs = routeCredentials(routes, {
      book, previous, baseHeaders: this.baseHeaders, auth, scope, log,
    });
    if (authConfigured || Object.keys(headers).length > 0) warnBare(this.sendAs, log);
    this.modules = new ModuleCalls(next, {
      deadlineMs,
      log,
      throttle: this.throttle,
      redact,
      faults,
      scopes,
      credentialsFor: (route, origin) => this.credentialsFor(route, origin),
      headersFor: (route, origin) => this.headersFor(route, origin),
    });
  }

  /**
   * The request is built before anything is awaited, so that a placeholder refused is known at
   * once; from here to the engine the path is plain promises, one continuation per layer that has
   * something to do with the answer (docs/performance.md).
   */
  dispatch(ctx) {
    const q = ctx.query;
    const route = q.subtype === undefined ? undefined : this.routes.get(q.subtype);
    try {
      if (route === undefined || route.kind === ROUTE_KIND.CONTRACT) return this.contractCall(ctx);
      if (route.kind === ROUTE_KIND.MODULE) return this.modules.call(route, q, ctx.signal, ctx.deadlineAt);
      return this.restCall(route, ctx);
    } catch (err) {
      if (!(err instanceof PlaceholderError)) return Promise.reject(err);
      const n = this.throttle.hit('placeholder');
      if (n) this.log.warn(`query refused before the backend: ${err.message}`, { subtype: logText(q.subtype), invokeId: q.invokeId, count: n });
      return Promise.resolve(appError(err.message, REASON.BAD_PLACEHOLDER));
    }
  }

  /** The default contract: a POST of the query to /query/<subtype> below each base URL (Failover gives them). */
  contractCall({
    query: q, signal, deadlineAt, kind = 'query',
  }) {
    if (!this.hasContract) return Promise.resolve(hostError(REASON.NO_BACKEND, 'no backend configured'));
    const withSubtype = q.subtype !== undefined;
    const base = this.target === null ? '' : this.target.basePath;
    return this.next.dispatch({
      origin: this.target === null ? null : this.target.origin,
      path: base + (withSubtype ? `/query/${encodeSegment('subtype', q.subtype)}` : '/query'),
      method: 'POST',
      headers: this.baseHeaders,
      body: JSON.stringify(queryJson(q)),
      signal,
      idempotent: true,
      group: signal.group,
      spec: this.contractSpecs.size === 0 || !withSubtype ? this.contract : this.contractSpecs.get(q.subtype) || this.contract,
      forHandler: false,
      credentials: this.auth,
      deadlineAt,
      timeoutMs: undefined,
      elsewhere: false,
      kind,
      query: q,
      route: withSubtype ? q.subtype : null,
      template: base + (withSubtype ? '/query/{subtype}' : '/query'),
      attempt: 1,
      retry: null,
    });
  }

  /** A REST route's request: its template filled, its body; sent down the layers once (routes.<subtype>.timeoutMs: it gives up sooner). */
  restCall(route, {
    query: q, signal, deadlineAt, kind = 'query',
  }) {
    const { headers, auth } = this.sendAs.get(route);
    const timed = route.timeoutMs < this.deadlineMs;
    const request = {
      origin: route.template.origin,
      path: fillTemplate(route.template, q),
      method: route.method,
      headers,
      body: route.body !== null ? fillBody(route.body, q) : route.sendBody ? JSON.stringify(queryJson(q)) : undefined,
      signal: timed ? AbortSignal.any([asAbortSignal(signal), AbortSignal.timeout(route.timeoutMs)]) : signal,
      idempotent: route.idempotent,
      group: signal.group,
      spec: route,
      forHandler: false,
      credentials: auth,
      deadlineAt,
      timeoutMs: timed ? route.timeoutMs : undefined,
      elsewhere: false,
      kind,
      query: q,
      route: q.subtype,
      template: route.template.path,
      attempt: 1,
      retry: null,
    };
    if (!timed) return this.next.dispatch(request);
    return this.next.dispatch(request).then((outcome) => {
      if (outcome.reason === REASON.TIMEOUT) return hostError(REASON.TIMEOUT, `backend did not answer within ${route.timeoutMs} ms (the route's timeoutMs)`);
      return outcome;
    });
  }

  /** The credentials a module route's ctx.request to origin carries: its own, else backend.auth where it goes (scope.js), else none. */
  credentialsFor(route, origin) {
    const { auth } = this.sendAs.get(route);
    if (auth !== undefined) return auth;
    return route.backendCredentials || this.scope.includes(origin) ? this.auth : null;
  }

  /** The headers a module route's ctx.request to origin starts from: backend.headers where they go (scope.js). */
  headersFor(route, origin) {
    return route.backendCredentials || this.scope.includes(origin) ? this.baseHeaders : JSON_HEADERS;
  }
}

/**
 * The credentials (auth.js) and headers each route's requests carry: one credentials per distinct
 * routes.<subtype>.auth, shared by the routes that name the same, taken over from the previous
 * backend's book where it had them. A REST route's are whole: {headers, auth, bare}; a module's,
 * its own auth (undefined: none of its own). bare: it gets neither backend.headers nor backend.auth.
 */
function routeCredentials(routes, {
  book, previous, baseHeaders, auth, scope,
}) {
  const sendAs = new Map(); // compiled route -> {headers, auth, bare}
  for (const route of routes.values()) {
    if (route.kind === ROUTE_KIND.CONTRACT) continue;
    const own = route.ownAuth ? book.for(route.auth, previous) : undefined;
    if (route.kind === ROUTE_KIND.MODULE) {
      sendAs.set(route, { headers: null, auth: own, bare: false });
      continue;
    }
    const trusted = route.backendCredentials || scope.includes(route.template.origin);
    const headers = trusted ? baseHeaders : JSON_HEADERS;
    sendAs.set(route, {
      headers: route.headers === null ? headers : { ...headers, ...route.headers },
      auth: own !== undefined ? own : trusted ? auth : null,
      bare: !trusted && own === undefined && route.headers === null,
    });
  }
  return sendAs;
}

/** backend.headers and backend.auth are set, and some REST routes get neither: the operator is told once, at load. */
function warnBare(sendAs, log) {
  const bare = [...sendAs].filter(([, s]) => s.bare).map(([route]) => route.template.origin);
  if (bare.length > 0) {
    log.warn(`backend.headers and backend.auth go to backend.url's origins only: ${[...new Set(bare)].join(', ')} get neither. `
      + 'A route whose API needs them sets "backendCredentials": true (or its own "auth" or "headers")');
  }
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

module.exports = { Route };
