'use strict';

// Turns one QUERY_REQ into one backend call and classifies the result as an outcome (outcome.js:
// ok, app_error, host_error). It never throws: every path ends in one of the three.

const { performance } = require('node:perf_hooks');
const {
  queryJson, fillTemplate, fillBody, encodeSegment, mapResponse,
} = require('./request');
const { NotInFormat, readBody } = require('./formats');
const { createEngine, engineOptions, ACCEPT_ENCODING } = require('./engines');
const { asAbortSignal } = require('./abort');
const { text: { printable } } = require('../../lib/protocol');
const { BackendHealth } = require('./health');
const { Breakers } = require('./breakers');
const { LogThrottle } = require('../../lib/log-throttle');
const { messageOf } = require('../../lib/errors');
const { BackendRequestError, PlaceholderError, failureReason } = require('./errors');
const {
  ok, appError, hostError, REASON, KIND, gaveUp,
} = require('./outcome');
const { createCredentials } = require('./auth');
const {
  statusMap, kindOf, statusReason, errorText, formatOf, UNAUTHORIZED,
} = require('./statuses');
const { parseRetryAfter } = require('./pace');
const { hideCallerData } = require('../../lib/redact');
const { isObject } = require('../../lib/objects');
const { ROUTE_KIND } = require('../../lib/route-kinds');
const {
  HandlerFaults, handlerScope, dropScope, runAs, currentCall, markError,
} = require('./user-code');
const { CredentialScope } = require('./scope');
const { sendWatched, resultOf, publishFailure } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');

const JSON_HEADERS = Object.freeze({ 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING });

/**
 * Whether a failed request blames the origin. Gave up waiting (the query's deadline, a route's
 * timeoutMs): only when the request was on the wire for at least half of that time and the
 * deadline timer fired on time. A request that waited for a free connection, or whose answer may
 * have sat unread while the event loop was busy, says nothing about the backend. The router going
 * away never does. Anything else (refused, reset, too large, a transport error) does.
 */
function blames(err, budgetMs) {
  if (err.reason === REASON.ABORTED) return false;
  if (gaveUp(err.reason)) return !err.late && err.onWireMs >= budgetMs / 2;
  return true;
}

/** A request that surely never reached the backend (no connection, its circuit or its pace refused it): safe to send again. */
const NOT_SENT = new Set([REASON.UNREACHABLE, REASON.CIRCUIT_OPEN, REASON.PAUSED, REASON.OVER_RATE]);

class Backend {
  /**
   * log: where its warnings go (SILENT_LOG where none is wanted); owner: what its diagnostics
   * messages carry as `gateway` (diagnostics.js: the Gateway; the warm-up's gateway is one too);
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
    this.owner = owner;
    this.redact = config.log.redact;
    this.throttle = new LogThrottle();
    this.warnedAt = new Map(); // kind -> {at, folded}: warnEvery()
    const runtime = config.backendRuntime || NO_RUNTIME;
    this.engine = createEngine(config.backend.engine, {
      ...engineOptions(config.backend),
      tls: runtime.tls,
      proxy: runtime.proxy,
    });
    this.targets = []; // the default contract's base URLs: [{origin, basePath}]
    this.strategy = config.backend.strategy;
    this.nextTarget = 0; // round robin position for 'balance'
    this.setBaseUrl(config.backend.url);
    // backend.headers and backend.auth go to backend.url's origins only, and to a route that asks for them (scope.js).
    this.scope = new CredentialScope(this.targets.map((t) => t.origin));
    // A reload keeps what the queries found of the origins it still calls: /health and ged145_backend_up say the same.
    const called = new Set(this.targets.map((t) => t.origin));
    for (const route of config.compiledRoutes.values()) if (route.template !== undefined) called.add(route.template.origin);
    this.health = new BackendHealth({
      log, instead, previous: previous === null ? null : previous.health, keeps: (origin) => called.has(origin),
    });
    this.baseHeaders = { ...JSON_HEADERS, ...runtime.headers };
    const { availability } = config;
    this.retry = availability.retry;
    // One circuit per route per origin; a route's breaker settings are its own (null: off for it).
    const routes = this.routes;
    this.breakers = new Breakers(availability.breaker, {
      log,
      owner,
      settingsFor: (subtype) => {
        const route = subtype === undefined ? undefined : routes.get(subtype);
        return route === undefined || route.breaker === undefined ? availability.breaker : route.breaker;
      },
      known: (subtype) => routes.has(subtype),
      pacing: { retryAfter: config.backend.retryAfter || NO_RETRY_AFTER, adaptiveRate: config.backend.adaptiveRate || NO_ADAPTIVE_RATE },
      health: this.health,
    });
    // What a status means for the default contract (statuses.js): backend.statuses and errorPath,
    // or a contract route's own.
    this.contract = { statuses: statusMap(config.backend.statuses), errorPath: config.backend.errorPath || 'error', mapping: null };
    this.contractSpecs = new Map(); // subtype -> its own {statuses, errorPath, mapping}
    for (const [subtype, route] of this.routes) {
      if (route.kind !== ROUTE_KIND.CONTRACT || (route.statuses === null && route.errorPath === null)) continue;
      this.contractSpecs.set(subtype, {
        statuses: route.statuses === null ? this.contract.statuses : route.statuses,
        errorPath: route.errorPath === null ? this.contract.errorPath : route.errorPath,
        mapping: null,
      });
    }
    // Credentials: one per distinct backend.auth / routes.<subtype>.auth, shared by the routes that name the same.
    this.credentials = new Map();
    const taken = previous === null ? new Map() : previous.credentials;
    const credentialsFor = (spec) => {
      if (spec === null || spec === undefined) return null;
      let c = this.credentials.get(spec.key);
      if (c === undefined) {
        c = taken.get(spec.key);
        if (c !== undefined) {
          taken.delete(spec.key); // the old backend no longer closes it; its token requests use this engine
          c.engine = this.engine;
        } else c = createCredentials(spec, { engine: this.engine, log, owner });
        this.credentials.set(spec.key, c);
      }
      return c;
    };
    // backend.auth is fetched (a token) only when some request may carry it.
    const routeList = [...this.routes.values()].filter((r) => r.kind !== ROUTE_KIND.CONTRACT);
    const used = this.targets.length > 0 || routeList.some((r) => r.backendCredentials && !r.ownAuth);
    this.auth = used ? credentialsFor(runtime.auth) : null;
    this.routeSend = new Map(); // compiled route -> {headers, auth}: a REST route's, whole; a module's own auth (undefined: none of its own)
    const bare = [];
    for (const route of routeList) {
      const own = route.ownAuth ? credentialsFor(route.auth) : undefined;
      if (route.kind === ROUTE_KIND.MODULE) {
        this.routeSend.set(route, { headers: null, auth: own });
        continue;
      }
      const trusted = route.backendCredentials || this.scope.includes(route.template.origin);
      const headers = trusted ? this.baseHeaders : JSON_HEADERS;
      this.routeSend.set(route, {
        headers: route.headers === null ? headers : { ...headers, ...route.headers },
        auth: own !== undefined ? own : trusted ? this.auth : null,
      });
      if (!trusted && own === undefined && route.headers === null) bare.push(route.template.origin);
    }
    if (bare.length > 0 && (runtime.auth !== null || Object.keys(runtime.headers).length > 0)) {
      log.warn(`backend.headers and backend.auth go to backend.url's origins only: ${[...new Set(bare)].join(', ')} get neither. `
        + 'A route whose API needs them sets "backendCredentials": true (or its own "auth" or "headers")');
    }
    this.origins = new Map(); // origin -> OriginStats, for /status
    // Each module route's scope: what its escaped errors are attributed to (user-code.js).
    this.faults = faults || new HandlerFaults({ log, owner });
    this.scopes = new Map(); // compiled route -> scope
    for (const [subtype, route] of this.routes) {
      if (route.kind === ROUTE_KIND.MODULE) this.scopes.set(route, handlerScope(subtype, route, this.faults, this.redact));
    }
  }

  /** The default contract's base URL(s) (validated by config.js: no query string or fragment). */
  setBaseUrl(url) {
    this.targets = (url === null || url === undefined ? [] : [].concat(url)).map((u) => {
      const m = /^(https?:\/\/[^/?#]+)(\/[^?#]*)?/.exec(u);
      return { origin: m[1], basePath: (m[2] || '').replace(/\/+$/, '') };
    });
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
      if (route.kind === ROUTE_KIND.MODULE) return this.callModule(route, q, signal, deadlineAt);
      return this.callRoute(route, q, signal, deadlineAt);
    } catch (err) {
      if (!(err instanceof PlaceholderError)) return Promise.reject(err);
      const n = this.throttle.hit('placeholder');
      if (n) this.log.warn(`query refused before the backend: ${err.message}`, { subtype: logText(q.subtype), invokeId: q.invokeId, count: n });
      return Promise.resolve(appError(err.message, REASON.BAD_PLACEHOLDER));
    }
  }

  /** The base URLs in the order to try: as configured (failover) or from the next in turn (balance). */
  candidates() {
    const t = this.targets;
    if (this.strategy !== 'balance' || t.length < 2) return t;
    const start = this.nextTarget;
    this.nextTarget = (start + 1) % t.length;
    return [...t.slice(start), ...t.slice(0, start)];
  }

  /**
   * The default contract, over the base URLs: an origin whose circuit is open is skipped (a dead
   * first origin costs no query while another is healthy), and a request that never reached its
   * origin (refused, unresolvable) goes to the next one while retry.minRemainingMs of the deadline is left.
   */
  callContract(q, signal, deadlineAt) {
    if (this.targets.length === 0) return Promise.resolve(hostError(REASON.NO_BACKEND, 'no backend configured'));
    const body = JSON.stringify(queryJson(q));
    const suffix = q.subtype === undefined ? '/query' : `/query/${encodeSegment('subtype', q.subtype)}`;
    const order = this.candidates();
    const spec = this.contractSpecs.size === 0 || q.subtype === undefined ? this.contract : this.contractSpecs.get(q.subtype) || this.contract;
    if (order.length === 1) return this.sendContract(order[0], q, body, suffix, signal, deadlineAt, false, spec, 1);
    return this.callOrigins(q, order, body, suffix, signal, deadlineAt, spec);
  }

  /**
   * The default contract's POST to one base URL, through its lane for q's subtype (elsewhere:
   * another origin may take it); spec: what its statuses mean; attempt: 1, or 2... on the next origin.
   */
  sendContract({ origin, basePath }, q, body, suffix, signal, deadlineAt, elsewhere, spec, attempt) {
    const request = {
      origin, path: basePath + suffix, method: 'POST', headers: this.baseHeaders, body, signal, group: signal.group,
    };
    whose(request, q, q.subtype === undefined ? `${basePath}/query` : `${basePath}/query/{subtype}`, attempt);
    return this.breakers.run(origin, q.subtype, () => this.send(request, spec, this.auth, deadlineAt), elsewhere);
  }

  /** callContract over two origins or more, in order. */
  async callOrigins(q, order, body, suffix, signal, deadlineAt, spec) {
    // Origins whose circuit is open for this subtype are skipped; if all are, the first is sent anyway.
    const tries = order.filter((t) => !this.breakers.isOpen(t.origin, q.subtype));
    if (tries.length === 0) tries.push(order[0]);
    let outcome;
    for (let i = 0; i < tries.length; i++) {
      const { origin } = tries[i];
      const last = i === tries.length - 1 || !this.retry.enabled;
      outcome = await this.sendContract(tries[i], q, body, suffix, signal, deadlineAt, !last, spec, i + 1);
      if (last || !NOT_SENT.has(outcome.reason) || deadlineAt - performance.now() < this.retry.minRemainingMs) return outcome;
      if (this.log.isLevelEnabled('debug')) {
        this.log.debug('backend retry on the next origin', {
          from: origin, reason: outcome.reason, cause: outcome.detail, invokeId: q.invokeId,
        });
      }
    }
    return outcome;
  }

  callRoute(route, q, signal, deadlineAt) {
    const path = fillTemplate(route.template, q);
    const { headers, auth } = this.routeSend.get(route);
    const body = route.body !== null ? fillBody(route.body, q) : route.sendBody ? JSON.stringify(queryJson(q)) : undefined;
    const origin = route.template.origin;
    const request = {
      origin, path, method: route.method, headers, body, signal, idempotent: route.idempotent, group: signal.group,
    };
    whose(request, q, route.template.path, 1);
    if (route.timeoutMs >= this.deadlineMs) return this.breakers.run(origin, q.subtype, () => this.send(request, route, auth, deadlineAt));
    // routes.<subtype>.timeoutMs: this route gives up sooner than the query deadline.
    request.signal = AbortSignal.any([asAbortSignal(signal), AbortSignal.timeout(route.timeoutMs)]);
    request.timeoutMs = route.timeoutMs;
    return this.breakers.run(origin, q.subtype, () => this.send(request, route, auth, deadlineAt)).then((outcome) => {
      if (outcome.reason === REASON.TIMEOUT) return hostError(REASON.TIMEOUT, `backend did not answer within ${route.timeoutMs} ms (the route's timeoutMs)`);
      return outcome;
    });
  }

  async callModule(route, q, signal, deadlineAt) {
    let moduleSignal = asAbortSignal(signal);
    if (route.timeoutMs < this.deadlineMs) moduleSignal = AbortSignal.any([moduleSignal, AbortSignal.timeout(route.timeoutMs)]);
    const ctx = { signal: moduleSignal, request: this.requestFor(route, q, moduleSignal, deadlineAt, signal.group) };
    const scope = this.scopes.get(route);
    try {
      const query = queryJson(q);
      // In the route's scope: what the handler starts and does not finish is known to be its own.
      const answer = await runAs(scope, query, route.handle, query, ctx);
      // As a REST answer must be a JSON object (bad_json), a handler's must be an object.
      if (!isObject(answer)) {
        this.faults.badAnswer(scope, answer, logText(q.subtype), q.invokeId);
        return hostError(REASON.BAD_ANSWER, 'handler module answered no object');
      }
      return ok(answer);
    } catch (err) {
      // A ctx.request that got no answer: the handler let it through; its outcome was counted already.
      if (err instanceof BackendRequestError) return err.outcome;
      if (signal.aborted) return hostError(REASON.ABORTED, 'backend aborted');
      if (moduleSignal.aborted) return hostError(REASON.TIMEOUT, `handler did not answer within ${route.timeoutMs} ms (the route's timeoutMs)`);
      if (err && err.appError) return appError(String(err.message || 'rejected'));
      const status = err ? Number(err.status || err.statusCode) : NaN;
      if (status >= 100 && status < 600) {
        const thrown = this.thrownStatus(route, status, err);
        if (thrown !== null) return thrown;
      }
      // The handler's own words stay in the host's log (caller data hidden under log.redact); the router gets E_AG_HOST_ERROR1.
      const n = this.throttle.hit('module-error');
      if (n) {
        const text = this.redact ? hideCallerData(messageOf(err), q) : messageOf(err);
        this.log.error(`handler module failed: ${text}`, { module: route.file, subtype: logText(q.subtype), invokeId: q.invokeId, count: n });
      }
      return hostError(REASON.MODULE_ERROR, 'handler module failed');
    }
  }

  /**
   * A handler's thrown error that carries an HTTP status (err.status or err.statusCode), read as
   * the route's statuses say, else as the default table does without a body (the handler chose
   * to throw: a 4xx but 408 and 429 is its "no"); null for a status that means a failure of the
   * handler (the caller then gets module_error, logged).
   */
  thrownStatus(route, status, err) {
    const mapped = route.statuses === null ? undefined : route.statuses.get(status);
    const text = String(err.message || 'rejected');
    if (mapped === KIND.APP_ERROR) return appError(text);
    if (mapped === KIND.OK) return ok({});
    if (mapped === KIND.HOST_ERROR) return hostError(statusReason(status), `handler module answered HTTP ${status}`);
    if (status >= 400 && status < 500 && status !== 408 && status !== 429) return appError(text);
    if (status === 408 || status === 429) return hostError(statusReason(status), `handler module answered HTTP ${status}`);
    return null;
  }

  /**
   * ctx.request for a handler module: an HTTP request through this backend (its engine, TLS, proxy
   * and keep-alive retry; the route's own auth; the origin's circuit, metrics and health). The
   * backend's own headers and auth go only to backend.url's origins, unless the route asks for
   * them everywhere (scope.js). Resolves {status, text, json()} for any HTTP answer; rejects with a
   * BackendRequestError (its `reason` one of outcome.js's) when there is none, which the handler
   * may catch or let through.
   */
  requestFor(route, q, signal, deadlineAt, group) {
    const own = this.routeSend.get(route).auth;
    const from = {
      route, q, subtype: q.subtype, signal, deadlineAt, group, own,
    };
    // Its rejections are marked as the calling handler's: one it does not await is attributed to its route.
    return (url, options) => {
      const call = currentCall();
      return this.handlerRequest(from, url, options).catch((err) => {
        throw markError(err, call);
      });
    };
  }

  /** One ctx.request (requestFor); from: the route and query it is made for. */
  async handlerRequest(from, url, {
    method = 'GET', headers = {}, body, json,
  } = {}) {
    const m = /^(https?:\/\/[^/?#]+)(.*)$/.exec(String(url));
    if (m === null) throw new TypeError(`ctx.request: ${url} is not an http:// or https:// URL`);
    const trusted = from.route.backendCredentials || this.scope.includes(m[1]);
    const auth = from.own !== undefined ? from.own : trusted ? this.auth : null;
    const request = {
      origin: m[1],
      path: m[2] === '' ? '/' : m[2],
      method: String(method).toUpperCase(),
      headers: { ...(trusted ? this.baseHeaders : JSON_HEADERS), ...lowerKeys(headers) },
      body: json === undefined ? body : JSON.stringify(json),
      signal: from.signal,
      idempotent: from.route.idempotent,
      group: from.group,
    };
    whose(request, from.q, null, 1);
    const outcome = await this.breakers.run(request.origin, from.subtype, async () => {
      const res = await this.exchange(request, auth, from.deadlineAt);
      if (res.kind !== undefined) return res;
      // An answer counts for or against the origin as the route's statuses say (statuses.js); the handler still gets it.
      const kind = kindOf(res.status, res.text, from.route);
      let failure = null;
      if (kind === UNAUTHORIZED) failure = this.unauthorized(res.status, request.origin);
      else if (kind === KIND.HOST_ERROR) failure = this.httpFailure(res, request.origin);
      ended(request, res.status, failure === null ? kind : failure.reason);
      if (failure === null) return { kind: KIND.OK, blame: false, response: res };
      return { ...failure, response: res };
    });
    if (outcome.response === undefined) throw new BackendRequestError(outcome);
    const { status, text } = outcome.response;
    return { status, text, json: () => JSON.parse(text) };
  }

  /**
   * One backend request, its credentials added, classified as an outcome for spec (a compiled
   * route, or the contract's {statuses, errorPath, mapping: null}).
   */
  send(request, spec, credentials, deadlineAt) {
    if (credentials !== null) {
      return this.exchange(request, credentials, deadlineAt).then((res) => (res.kind !== undefined ? res : this.answered(res, spec, request)));
    }
    // Without credentials, exchange() is one request: its answer is classified in the engine's own continuation.
    return this.transmit(request).then((res) => this.answered(res, spec, request), (err) => this.noAnswer(err, request));
  }

  /** An answer classified for spec, and its end told to the channels' subscribers (its classification as its result). */
  answered(res, spec, request) {
    const outcome = this.classify(res, spec, request.origin);
    ended(request, res.status, resultOf(outcome));
    return outcome;
  }

  /** One request to the engine, counted for its origin's figures and shown to the channels' subscribers (diagnostics.js). */
  transmit(request) {
    this.stats(request.origin).requests++;
    return sendWatched(this.engine, this.owner, request);
  }

  /**
   * One HTTP exchange: {status, text}, or a host_error outcome when there was no answer. With
   * OAuth2 credentials, a 401 drops that token, and the request goes again once with a new one
   * while the deadline leaves retry.minRemainingMs.
   */
  async exchange(request, credentials, deadlineAt) {
    for (let attempt = 0; ; attempt++) {
      let used = null;
      if (credentials !== null) {
        used = credentials.header();
        if (used === null) {
          try {
            used = await credentials.wait(request.signal);
          } catch (err) {
            return this.noCredentials(err, request);
          }
        }
        request.headers = { ...request.headers, authorization: used };
      }
      let res;
      try {
        res = await this.transmit(request);
      } catch (err) {
        return this.noAnswer(err, request);
      }
      if (res.status === 401 && attempt === 0 && used !== null && credentials.refreshes
        && deadlineAt - performance.now() >= this.retry.minRemainingMs && credentials.renew(used)) {
        ended(request, 401, REASON.UNAUTHORIZED);
        request.attempt++;
        request.retry = 'auth';
        continue;
      }
      return res;
    }
  }

  /** A request that got no answer: the engine's reason, as evidence against the origin or not (blames). */
  noAnswer(err, request) {
    const reason = err.reason || REASON.ERROR;
    const blame = blames(err, reason === REASON.TIMEOUT ? request.timeoutMs : this.deadlineMs);
    const detail = err.detail ? `${err.detail} (${request.origin})` : null;
    if (request.observer) request.observer.error(err, reason);
    const outcome = hostError(reason, `backend ${reason.replace(/_/g, ' ')}`, blame, detail);
    if (reason !== REASON.ABORTED) this.failed(request.origin, outcome);
    if (reason === REASON.TLS_ERROR) {
      this.warnEvery(`tls ${request.origin}`, `backend TLS handshake with ${request.origin} failed: ${err.detail}; `
        + 'check backend.tls (ca for a private CA, servername for another name) and the backend\'s certificate');
    }
    return outcome;
  }

  /** No credentials for a request: the token endpoint failed (auth_failed, not the API's failure), or the query's time ran out waiting. */
  noCredentials(err, request) {
    if (request.signal.aborted) {
      const reason = failureReason(null, request.signal);
      return hostError(reason, `backend ${reason.replace(/_/g, ' ')} (waiting for a token)`);
    }
    const outcome = hostError(REASON.AUTH_FAILED, 'backend token request failed', false, messageOf(err));
    this.failed(request.origin, outcome);
    return outcome;
  }

  /** An HTTP answer -> an outcome, as statuses.js reads its status for spec; a 2xx read in the route's format (formats.js). */
  classify(res, spec, origin) {
    const { status, text } = res;
    const kind = kindOf(status, text, spec);
    if (kind === KIND.OK) {
      const format = formatOf(spec);
      let doc = readBody(format, text);
      if (doc instanceof NotInFormat) {
        if (text.trim() === '' && spec.statuses !== null && spec.statuses.get(status) === KIND.OK) doc = {}; // a mapped status with no body answers empty
        else return this.badAnswer(origin, format, doc.problem);
      }
      const { mapping } = spec;
      return ok(mapping ? mapResponse(mapping, doc, format.path) : doc);
    }
    if (kind === KIND.APP_ERROR) return appError(errorText(text, spec, status), undefined, status); // a deliberate "no" is an answer
    if (kind === UNAUTHORIZED) return this.unauthorized(status, origin);
    return this.httpFailure(res, origin);
  }

  /** 401 or 403: the gateway's own credentials were refused, which is no answer about the caller. */
  unauthorized(status, origin) {
    const outcome = hostError(REASON.UNAUTHORIZED, `backend refused the gateway's credentials (HTTP ${status})`, true, `HTTP ${status} (${origin})`);
    this.failed(origin, outcome);
    this.warnEvery(`unauthorized ${origin}`, `backend ${origin} refused the gateway's credentials (HTTP ${status}); check backend.auth`
      + ' (or the route\'s auth): the router gets E_AG_HOST_ERROR1 for these queries');
    return outcome;
  }

  /**
   * An HTTP answer that is a host error: evidence against the origin, with its Retry-After (429,
   * 503) for the lane's pace. A 429 or 408 (or a 4xx that is a proxy's page) is warned about once
   * per WARN_EVERY_MS per origin: a 5xx is the circuit's and the health's to tell.
   */
  httpFailure({ status, retryAfter }, origin) {
    const reason = statusReason(status);
    const outcome = hostError(reason, `backend HTTP ${status}`, true);
    if ((status === 429 || status === 503) && retryAfter !== undefined) {
      const ms = parseRetryAfter(retryAfter);
      if (ms !== undefined) outcome.retryAfterMs = ms;
    }
    this.failed(origin, outcome);
    if (status < 500) {
      const what = status === 429 ? 'rate limited the gateway' : `answered HTTP ${status} with a body that is not the API's`;
      this.warnEvery(`${reason} ${origin}`, `backend ${origin} ${what} (${reason}): no answer about the caller, the router gets`
        + ` ${this.health.instead}${outcome.retryAfterMs === undefined ? '' : `; its Retry-After asks for a pause of ${outcome.retryAfterMs} ms`}`);
    }
    return outcome;
  }

  /** A body not in the route's format (formats.js): bad_json, bad_xml. */
  badAnswer(origin, format, what) {
    const outcome = hostError(format.reason, `backend answered with ${what}`, true);
    this.failed(origin, outcome);
    return outcome;
  }

  /** An origin's figures for /status, made on first use. */
  stats(origin) {
    let s = this.origins.get(origin);
    if (s === undefined) {
      s = {
        requests: 0, failures: 0, byReason: {}, lastError: null, lastErrorAt: null,
      };
      this.origins.set(origin, s);
    }
    return s;
  }

  failed(origin, outcome) {
    const s = this.stats(origin);
    s.failures++;
    s.byReason[outcome.reason] = (s.byReason[outcome.reason] || 0) + 1;
    s.lastError = outcome.detail ? `${outcome.reason}: ${outcome.detail}` : outcome.reason;
    s.lastErrorAt = Date.now();
    publishFailure(this.owner, origin, outcome);
  }

  /** A warning at most once per WARN_EVERY_MS for its kind, with how many were folded since the last. */
  warnEvery(kind, message) {
    const now = Date.now();
    const w = this.warnedAt.get(kind);
    if (w !== undefined && now - w.at < WARN_EVERY_MS) {
      w.folded++;
      return;
    }
    this.log.warn(message, w !== undefined && w.folded > 0 ? { sinceLastLine: w.folded } : {});
    this.warnedAt.set(kind, { at: now, folded: 0 });
  }

  /** Why queries cannot reach the backend now (for /ready), or null. */
  notReady() {
    for (const c of this.credentials.values()) {
      const p = c.refreshes ? c.problem() : null;
      if (p !== null) return `backend auth: ${p}`;
    }
    return null;
  }

  /** Per origin: its figures and its health (its state, and each route's: health.js). */
  toJSON() {
    const origins = {};
    const health = this.health.originsJSON();
    for (const [origin, s] of this.origins) {
      origins[origin] = {
        ...(health[origin] || { state: 'reachable', routes: [] }),
        ...s,
        byReason: { ...s.byReason },
        lastErrorAt: s.lastErrorAt === null ? null : new Date(s.lastErrorAt).toISOString(),
      };
    }
    return { origins, auth: [...this.credentials.values()].map((c) => c.status()) };
  }

  close() {
    for (const scope of this.scopes.values()) dropScope(scope);
    this.health.close(); // circuits hold no timers: a probe goes when a call asks for one
    for (const c of this.credentials.values()) c.close();
    return this.engine.close();
  }
}

const WARN_EVERY_MS = 10_000;

const NO_RETRY_AFTER = Object.freeze({ enabled: true, maxMs: 30_000 });
const NO_ADAPTIVE_RATE = Object.freeze({ enabled: true, minPerSecond: 1, releaseAfterMs: 60_000 });

const NO_RUNTIME = Object.freeze({
  tls: null, proxy: null, auth: null, headers: {},
});

/**
 * Whose request it is, for the channels' subscribers (diagnostics.js): q's, its attempt-th (the
 * next origin's after the first); template: the path before placeholders (null: the handler's own).
 */
function whose(request, q, template, attempt) {
  request.kind = 'query';
  request.query = q;
  request.route = q.subtype === undefined ? null : q.subtype;
  request.template = template;
  request.attempt = attempt;
  request.retry = attempt === 1 ? null : 'failover';
  request.observer = null;
}

/** The end of a request told to the channels' subscribers, when someone watches it. */
function ended(request, status, result) {
  if (request.observer) request.observer.end(status, result);
}

/** Router-supplied text for a log field: printable, bounded. */
const logText = (text) => (text === undefined ? undefined : printable(text, 64));

function lowerKeys(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj || {})) out[k.toLowerCase()] = v;
  return out;
}

module.exports = { Backend };
