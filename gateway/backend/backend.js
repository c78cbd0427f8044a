'use strict';

// The backend side as the session sees it: Backend.dispatch(query) gives back the query's handle
// (handle.js), which sends it down one chain of layers (layers/, one file each) and calls its
// handler with one outcome (outcome.js: ok, app_error, host_error). Nothing rejects: every path
// ends in an outcome. The chain, from the top, each wrapping the one below:
//
//   Substitute  a failed outcome answered with a stale cached answer or the route's fallback
//   Cache       a fresh cached answer answers without the backend; a stale one kept for Substitute
//   Route       the query's route makes its request: the default contract, a REST route (its
//               template, body, credentials, its own timeoutMs) or a handler module (its
//               ctx.request goes down the layers below)
//   Failover    the default contract's base URLs, as configured or in turn (backend.strategy);
//               with backend.hedge, one more request to the next origin when the first is slow
//   Breaker     the lane of the route on the origin: its circuit and its pace (breakers.js)
//   Answer      what the answer means for the route (classify.js), and what a failure tells
//   Auth        the request's credentials; a 401 drops an OAuth2 token, the request goes once more
//   Transport   the engine (engines/), the origin's figures, the request channels (diagnostics.js)
//
// Two layers join the top when a route asks for them, and cost nothing otherwise (they are not in
// the chain): Canary, under Substitute, answers a canary's queries from its candidate; Shadow, under
// it, sends a sampled query to its candidate once the live outcome is known, and compares the two.
// A candidate (candidates.<name>) is a chain of its own from Route down, composed here the same
// way, with its own circuits, health and figures: what it does never touches the live route's.
//
// Above Route a layer gets the query's ctx {query, signal, deadlineAt, substitutes}; from Route
// down, a request: the engine's (engines/index.js) with what the layers read (spec, credentials,
// deadlineAt, timeoutMs, elsewhere) and whose it is for the channels' subscribers (kind, query,
// route, template, attempt, retry). A layer that changes a request passes on a new one.

const { createEngine, engineOptions } = require('./engines');
const { BackendHealth } = require('./health');
const { Breakers } = require('./breakers');
const { AnswerCache } = require('./cache');
const { CredentialsBook } = require('./auth');
const { statusMap } = require('./statuses');
const { HandlerFaults, handlerScope, dropScope } = require('./user-code');
const { CredentialScope } = require('./scope');
const { SILENT_LOG } = require('./silent-log');
const { OriginFigures } = require('./origin-figures');
const { QueryHandle } = require('./handle');
const { Substitutes } = require('./substitutes');
const { Warnings } = require('./warnings');
const { ROUTE_KIND } = require('../route-kinds');
const { CanaryWindow } = require('./canary-window');
const { Substitute } = require('./layers/substitute');
const { Canary } = require('./layers/canary');
const { Shadow } = require('./layers/shadow');
const { Cache } = require('./layers/cache');
const { Route } = require('./layers/route');
const { Failover } = require('./layers/failover');
const { Breaker } = require('./layers/breaker');
const { Answer } = require('./layers/answer');
const { Auth } = require('./layers/auth');
const { Transport } = require('./layers/transport');

/** The chain: bottom, then each layer's class wrapping the one before (compose(t, [Auth], [Answer]) is Answer over Auth over t). */
function compose(bottom, ...layers) {
  return layers.reduce((next, [Layer, options]) => new Layer(next, options), bottom);
}

class Backend {
  /**
   * log: where its warnings go (SILENT_LOG where none is wanted); owner: what its diagnostics
   * messages carry as `gateway` (diagnostics.js: the Gateway, the warm-up's private one too);
   * cache: an AnswerCache to keep (a reload with the same cache settings keeps its entries);
   * previous: the Backend this one replaces (a reload): its OAuth2 tokens are taken over, not
   * fetched again, and its health's history kept; keepAnswer: the form a new cache keeps an answer
   * in (the gateway gives answer/'s keptAnswer); faults: the gateway's record of its handler
   * modules' errors (user-code.js), kept across reloads; keepError: the ERROR text a FAILURE_CONF
   * carries (answer/'s keptError): with keepAnswer, what shadow traffic compares.
   */
  constructor(config, {
    log = SILENT_LOG, owner = null, cache, previous = null, keepAnswer, keepError, faults = null,
  } = {}) {
    this.owner = owner;
    this.routes = config.compiledRoutes; // a Map: subtypes such as "__proto__" or "constructor" are plain keys
    const { availability } = config;
    this.top = { fallback: availability.fallback, cache: availability.cache, cacheScope: availability.cacheScope };
    // One cache for the process; its size and store come from the top level, or the first route that has one.
    const firstCache = availability.cache || [...this.routes.values()].map((r) => r.cache).find(Boolean);
    const anyFallback = availability.fallback || [...this.routes.values()].some((r) => r.fallback);
    this.cache = !firstCache ? null : cache || new AnswerCache(firstCache, {
      log, owner, keep: keepAnswer, redact: config.log.redact,
    });
    const runtime = config.backendRuntime; // {tls, proxy, auth, headers}: config/compiled.js
    this.engine = createEngine(config.backend.engine, { ...engineOptions(config.backend), tls: runtime.tls, proxy: runtime.proxy });
    const targets = baseUrls(config.backend.url);
    const routerGets = routerGetsText(Boolean(firstCache), Boolean(anyFallback));
    this.health = new BackendHealth({
      log, routerGets, previous: previous === null ? null : previous.health, keeps: calledOrigins(targets, this.routes),
    });
    this.breakers = breakersFor(this.routes, availability.breaker, config.backend, { log, owner, health: this.health });
    this.credentials = new CredentialsBook({ engine: this.engine, log, owner });
    const previousBook = previous === null ? null : previous.credentials;
    // backend.headers and backend.auth go to backend.url's origins only, and to a route that asks for them (scope.js).
    const scope = new CredentialScope(targets.map((t) => t.origin));
    // backend.auth is fetched (a token) only when some request may carry it.
    const used = targets.length > 0 || [...this.routes.values()].some((r) => r.kind !== ROUTE_KIND.CONTRACT && r.backendCredentials && !r.ownAuth);
    const auth = used ? this.credentials.for(runtime.auth, previousBook) : null;
    this.figures = new OriginFigures(owner); // per origin, for /status
    // Each module route's scope: what its escaped errors are attributed to (user-code.js).
    this.faults = faults || new HandlerFaults({ log, owner });
    this.scopes = new Map(); // compiled route -> scope
    for (const [subtype, route] of this.routes) {
      if (route.kind === ROUTE_KIND.MODULE) this.scopes.set(route, handlerScope(subtype, route, this.faults, config.log.redact));
    }
    const warnings = new Warnings(log);
    const { retry } = availability;
    const routeOptions = {
      headers: runtime.headers,
      authConfigured: runtime.auth !== null,
      auth,
      scope,
      book: this.credentials,
      previous: previousBook,
      deadlineMs: config.deadlineMs,
      log,
      redact: config.log.redact,
      faults: this.faults,
      scopes: this.scopes,
    };
    const live = compose(
      new Transport(this.engine, {
        owner, figures: this.figures, warnings, deadlineMs: config.deadlineMs,
      }),
      [Auth, { retry, figures: this.figures }],
      [Answer, { figures: this.figures, warnings, routerGets }],
      [Breaker, this.breakers],
      [Failover, {
        targets, strategy: config.backend.strategy, retry, breakers: this.breakers, log, hedge: availability.hedge, owner,
      }],
      [Route, {
        routes: this.routes,
        // What a status means for the default contract (statuses.js): backend.statuses and errorPath, or a contract route's own.
        contract: { statuses: statusMap(config.backend.statuses), errorPath: config.backend.errorPath || 'error', mapping: null },
        hasContract: targets.length > 0,
        target: targets.length === 1 ? targets[0] : null,
        ...routeOptions,
      }],
      [Cache, { cache: this.cache, owner }],
    );
    this.canaries = new Map(); // subtype -> CanaryWindow
    this.chain = compose(
      live,
      ...this.candidateLayers(config, {
        routeOptions, retry, owner, log, keepAnswer, keepError,
      }),
      [Substitute],
    );
  }

  /**
   * The Shadow and Canary layers the routes ask for ([Layer, options] pairs, none when no route
   * names a candidate: the live path then has neither), over each candidate's chain.
   */
  candidateLayers(config, {
    routeOptions, retry, owner, log, keepAnswer, keepError,
  }) {
    const candidates = this.candidateChains(config, { routeOptions, retry, owner });
    const shadows = new Map(); // subtype -> {candidate, sample, chain}
    for (const [subtype, route] of this.routes) {
      if (route.shadow) shadows.set(subtype, { ...route.shadow, chain: candidates.get(route.shadow.candidate) });
      if (route.canary) {
        this.canaries.set(subtype, new CanaryWindow(subtype, route.canary, candidates.get(route.canary.candidate), { log, owner }));
      }
    }
    const reply = keepAnswer === undefined ? undefined : { answer: keepAnswer, error: keepError || String };
    return [
      ...(shadows.size > 0 ? [[Shadow, {
        shadows, reply, deadlineMs: config.deadlineMs, owner,
      }]] : []),
      ...(this.canaries.size > 0 ? [[Canary, { canaries: this.canaries, owner }]] : []),
    ];
  }

  /**
   * name -> the chain of each candidate a route names: Route down to Transport, as the live one,
   * with circuits, health and origin figures of its own and no log of its own (a candidate failing
   * is what shadow and canary report; its lines would read as the live backend's). Each subtype
   * that names it finds it as its route.
   */
  candidateChains(config, { routeOptions, retry, owner }) {
    const chains = new Map();
    this.candidateFigures = new Map(); // name -> OriginFigures
    this.candidateHealth = [];
    for (const [name, candidate] of config.compiledCandidates) {
      const subtypes = [...this.routes].filter(([, r]) => (r.shadow && r.shadow.candidate === name)
        || (r.canary && r.canary.candidate === name)).map(([subtype]) => subtype);
      if (subtypes.length === 0) continue;
      const routes = new Map(subtypes.map((subtype) => [subtype, candidate]));
      const targets = baseUrls(candidate.baseUrl);
      const health = new BackendHealth({
        log: SILENT_LOG, routerGets: 'nothing: a candidate answers no query alone', previous: null, keeps: calledOrigins(targets, routes),
      });
      const breakers = breakersFor(routes, config.availability.breaker, config.backend, { log: SILENT_LOG, owner, health });
      const figures = new OriginFigures(owner);
      this.candidateFigures.set(name, figures);
      this.candidateHealth.push(health);
      const warnings = new Warnings(SILENT_LOG);
      if (candidate.kind === ROUTE_KIND.MODULE) {
        this.scopes.set(candidate, handlerScope(subtypes[0], candidate, this.faults, config.log.redact));
      }
      chains.set(name, compose(
        new Transport(this.engine, {
          owner, figures, warnings, deadlineMs: config.deadlineMs,
        }),
        [Auth, { retry, figures }],
        [Answer, { figures, warnings, routerGets: 'nothing' }],
        [Breaker, breakers],
        [Failover, {
          targets, strategy: config.backend.strategy, retry, breakers, log: SILENT_LOG,
        }],
        [Route, {
          ...routeOptions,
          routes,
          contract: { statuses: statusMap(config.backend.statuses), errorPath: config.backend.errorPath || 'error', mapping: null },
          hasContract: targets.length > 0,
          target: targets.length === 1 ? targets[0] : null,
          // backend.headers and backend.auth go to backend.url's origins only (scope.js): a candidate elsewhere gets neither.
          headers: targets.length > 0 && routeOptions.scope.includes(targets[0].origin) ? routeOptions.headers : {},
          auth: targets.length > 0 && !routeOptions.scope.includes(targets[0].origin) ? null : routeOptions.auth,
          log: SILENT_LOG,
        }],
      ));
    }
    return chains;
  }

  /**
   * One query handed to the backend: handler.onOutcome(outcome) is called once, unless the
   * session takes the handle's substitute at the deadline first. deadlineAt: performance.now()
   * time; group: whose query it is (a session's id). send: false for a query whose deadline
   * passed while it waited for a slot, so that the backend is not asked a question nobody waits
   * for any more.
   */
  dispatch(query, deadlineAt, group, handler, send = true) {
    const route = query.subtype === undefined ? undefined : this.routes.get(query.subtype);
    const settings = route === undefined ? this.top : route;
    const substitutes = settings.fallback || (settings.cache && this.cache !== null) ? new Substitutes(settings, query, this.owner) : null;
    const handle = new QueryHandle(this.chain, query, deadlineAt, group, handler, substitutes);
    if (send) handle.start();
    return handle;
  }

  /** Why queries cannot reach the backend now (for /ready), or null. */
  notReady() {
    return this.credentials.notReady();
  }

  /** Per origin with a circuit, its least healthy state (breakers.js), for ged145_backend_circuit_state. */
  circuitStates() {
    return this.breakers.states();
  }

  /** {entries, bytes, store} of the answer cache, or null without one. */
  cacheFigures() {
    return this.cache === null ? null : this.cache.toJSON();
  }

  /** Its health, circuits and pacing; per origin its figures and health; the credentials' state; the cache. */
  toJSON() {
    return {
      ...this.health.toJSON(),
      circuits: this.breakers.toJSON(),
      pacing: this.breakers.pacingJSON(),
      origins: this.figures.toJSON(this.health.originsJSON()),
      auth: this.credentials.toJSON(),
      cache: this.cacheFigures(),
      ...(this.canaries.size > 0 ? { canaries: Object.fromEntries([...this.canaries].map(([subtype, c]) => [subtype, c.toJSON()])) } : {}),
    };
  }

  async close({ keepCache = false } = {}) {
    if (this.cache !== null && !keepCache) await this.cache.close();
    for (const scope of this.scopes.values()) dropScope(scope);
    this.health.close(); // circuits hold no timers: a probe goes when a call asks for one
    for (const health of this.candidateHealth) health.close();
    this.credentials.close();
    await this.engine.close();
  }
}

/** What the router gets while the backend fails, as the health's and the answer's log lines say it. */
function routerGetsText(cache, fallback) {
  if (cache && fallback) return 'a stale cached answer where there is one, else the fallback answer';
  if (cache) return 'a stale cached answer where there is one, else E_AG_HOST_ERROR1';
  if (fallback) return 'the fallback answer';
  return 'E_AG_HOST_ERROR1';
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

module.exports = { Backend };
