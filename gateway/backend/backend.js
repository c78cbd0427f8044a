'use strict';

// Turns one QUERY_REQ into one backend call and classifies the result as an outcome (outcome.js:
// ok, app_error, host_error). It never throws: every path ends in one of the three.

const { performance } = require('node:perf_hooks');
const {
  queryJson, fillTemplate, encodeSegment, jsonPath, mapResponse, PlaceholderError,
} = require('./request');
const { createEngine } = require('./engines');
const { asAbortSignal } = require('./abort');
const { text: { printable } } = require('../../lib/protocol');
const { BackendHealth } = require('./health');
const { Breakers } = require('./breakers');
const { LogThrottle } = require('../../lib/log-throttle');
const { messageOf } = require('../../lib/errors');
const {
  ok, appError, hostError, httpReason, REASON,
} = require('./outcome');

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx', '6xx', '7xx', '8xx', '9xx']; // backend_responses_total{class}

/**
 * Whether a failed request blames the origin. Gave up waiting (the query's deadline, a route's
 * timeoutMs): only when the request was on the wire for at least half of that time and the
 * deadline timer fired on time. A request that waited for a free connection, or whose answer may
 * have sat unread while the event loop was busy, says nothing about the backend. The router going
 * away never does. Anything else (refused, reset, too large, a transport error) does.
 */
function blames(err, budgetMs) {
  switch (err.reason) {
    case REASON.ABORTED: return false;
    case REASON.DEADLINE: case REASON.TIMEOUT: return !err.late && err.onWireMs >= budgetMs / 2;
    default: return true;
  }
}

/** A request that surely never reached the backend (the connection was never made): safe to send again. */
const NOT_SENT = new Set([REASON.UNREACHABLE]);

class Backend {
  /** log and metrics are optional (the warm-up runs without them). */
  /** instead: what the router gets while the backend fails, for the health's log line. */
  constructor(config, { log = null, metrics = null, instead } = {}) {
    this.routes = config.compiledRoutes; // a Map: subtypes such as "__proto__" or "constructor" are plain keys
    this.deadlineMs = config.deadlineMs;
    this.log = log;
    this.metrics = metrics;
    this.throttle = new LogThrottle();
    this.health = new BackendHealth({ log, metrics, instead });
    this.engine = createEngine(config.backend.engine, {
      connections: config.backend.connections,
      maxResponseBytes: config.backend.maxResponseBytes,
    });
    this.targets = []; // the default contract's base URLs: [{origin, basePath}]
    this.strategy = config.backend.strategy;
    this.nextTarget = 0; // round robin position for 'balance'
    this.setBaseUrl(config.backend.url);
    this.baseHeaders = { ...JSON_HEADERS, ...lowerKeys(config.backend.headers) };
    const availability = config.availability || { breaker: { enabled: false }, retry: { enabled: false, minRemainingMs: 0 } };
    this.retry = availability.retry;
    // A route that calls its own origin may give that origin's breaker its own thresholds.
    const byOrigin = new Map();
    for (const route of this.routes.values()) if (route.kind === 'http') byOrigin.set(route.template.origin, route.breaker);
    this.breakers = new Breakers(availability.breaker, { log, metrics, settingsFor: (origin) => byOrigin.get(origin) || availability.breaker });
  }

  /** The default contract's base URL(s) (validated by config.js: no query string or fragment). */
  setBaseUrl(url) {
    this.targets = (url === null || url === undefined ? [] : [].concat(url)).map((u) => {
      const m = /^(https?:\/\/[^/?#]+)(\/[^?#]*)?/.exec(u);
      return { origin: m[1], basePath: (m[2] || '').replace(/\/+$/, '') };
    });
  }

  /**
   * One backend outcome for q (see the top of this file). deadlineAt (performance.now() time):
   * when the query's deadline runs out, so that a retry is tried only while enough of it is left.
   */
  async call(q, signal, deadlineAt = Infinity) {
    const route = q.subtype === undefined ? undefined : this.routes.get(q.subtype);
    try {
      if (route === undefined || route.kind === 'contract') return await this.callContract(q, signal, deadlineAt);
      if (route.kind === 'module') return await this.callModule(route, q, signal);
      return await this.callRoute(route, q, signal);
    } catch (err) {
      if (!(err instanceof PlaceholderError)) throw err;
      const n = this.throttle.hit('placeholder');
      if (n && this.log) this.log.warn(`query refused before the backend: ${err.message}`, { subtype: logText(q.subtype), invokeId: q.invokeId, count: n });
      return appError(err.message, REASON.BAD_PLACEHOLDER);
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
  async callContract(q, signal, deadlineAt) {
    if (this.targets.length === 0) return hostError(REASON.NO_BACKEND, 'no backend configured');
    const body = JSON.stringify(queryJson(q));
    const suffix = q.subtype === undefined ? '/query' : `/query/${encodeSegment('subtype', q.subtype)}`;
    const order = this.candidates();
    // Origins whose circuit is open are skipped; if all are open, the first one's breaker answers at once.
    const tries = order.length === 1 ? order : order.filter((t) => !this.breakers.isOpen(t.origin));
    if (tries.length === 0) tries.push(order[0]);
    let outcome;
    for (let i = 0; i < tries.length; i++) {
      const { origin, basePath } = tries[i];
      const request = {
        origin, path: basePath + suffix, method: 'POST', headers: this.baseHeaders, body, signal,
      };
      outcome = await this.breakers.run(origin, () => this.send(request, null, 'error'));
      const last = i === tries.length - 1 || !this.retry.enabled;
      if (last || !NOT_SENT.has(outcome.reason) || deadlineAt - performance.now() < this.retry.minRemainingMs) return outcome;
      if (this.metrics) this.metrics.backendRetries.inc();
      if (this.debugEnabled()) {
        this.log.debug('backend retry on the next origin', {
          from: origin, reason: outcome.reason, cause: outcome.detail, invokeId: q.invokeId,
        });
      }
    }
    return outcome;
  }

  debugEnabled() {
    return this.log !== null && this.log.isLevelEnabled('debug');
  }

  async callRoute(route, q, signal) {
    const path = fillTemplate(route.template, q);
    const headers = { ...this.baseHeaders, ...route.headers };
    const body = route.sendBody ? JSON.stringify(queryJson(q)) : undefined;
    const origin = route.template.origin;
    const request = {
      origin, path, method: route.method, headers, body, signal,
    };
    if (route.timeoutMs >= this.deadlineMs) return this.breakers.run(origin, () => this.send(request, route.mapping, route.errorPath));
    // routes.<subtype>.timeoutMs: this route gives up sooner than the query deadline.
    request.signal = AbortSignal.any([asAbortSignal(signal), AbortSignal.timeout(route.timeoutMs)]);
    request.timeoutMs = route.timeoutMs;
    const outcome = await this.breakers.run(origin, () => this.send(request, route.mapping, route.errorPath));
    if (outcome.reason === REASON.TIMEOUT) return hostError(REASON.TIMEOUT, `backend did not answer within ${route.timeoutMs} ms (the route's timeoutMs)`);
    return outcome;
  }

  async callModule(route, q, signal) {
    try {
      const answer = await route.handle(queryJson(q), { signal: asAbortSignal(signal) });
      return ok(answer === null || typeof answer !== 'object' ? {} : answer);
    } catch (err) {
      if (signal.aborted) return hostError(REASON.ABORTED, 'backend aborted');
      const status = err && Number(err.status || err.statusCode);
      if ((err && err.appError) || (status >= 400 && status < 500)) return appError(String(err.message || 'rejected'));
      // The handler's own words stay in the host's log; the router gets E_AG_HOST_ERROR1.
      const n = this.throttle.hit('module-error');
      if (n && this.log) this.log.error(
        `handler module failed: ${messageOf(err)}`, { module: route.file, subtype: logText(q.subtype), invokeId: q.invokeId, count: n }
      );
      return hostError(REASON.MODULE_ERROR, 'handler module failed');
    }
  }

  async send(request, mapping, errorPath) {
    let res;
    const started = performance.now();
    try {
      res = await this.engine.request(request);
    } catch (err) {
      const reason = err.reason || REASON.ERROR;
      const blame = blames(err, reason === REASON.TIMEOUT ? request.timeoutMs : this.deadlineMs);
      const detail = err.detail ? `${err.detail} (${request.origin})` : null;
      if (blame) this.health.failure(detail ? `${reason}: ${err.detail}` : reason);
      if (reason !== REASON.ABORTED && this.metrics) this.metrics.observeBackend('error', null);
      return hostError(reason, `backend ${reason.replace(/_/g, ' ')}`, blame, detail);
    }
    const { status, text } = res;
    if (this.metrics) this.metrics.observeBackend(STATUS_CLASSES[Math.floor(status / 100)] || 'other', (performance.now() - started) / 1000);
    if (status >= 500 || status < 200 || (status >= 300 && status < 400)) this.health.failure(`HTTP ${status}`);
    if (status >= 200 && status < 300) {
      let json;
      try {
        json = JSON.parse(text);
      } catch {
        this.health.failure('bad JSON');
        return hostError(REASON.BAD_JSON, 'backend answered with a body that is not JSON', true);
      }
      if (json === null || typeof json !== 'object' || Array.isArray(json)) {
        this.health.failure('bad JSON');
        return hostError(REASON.BAD_JSON, 'backend answered with JSON that is not an object', true);
      }
      this.health.success();
      return ok(mapping ? mapResponse(mapping, json) : json);
    }
    if (status >= 400 && status < 500) {
      this.health.success(); // a deliberate "no" is an answer
      return appError(appErrorText(text, errorPath, status), undefined, status);
    }
    return hostError(httpReason(status), `backend HTTP ${status}`, true);
  }

  close() {
    this.health.close(); // circuits hold no timers: a probe goes when a call asks for one
    return this.engine.close();
  }
}

/** The text for the ERROR tag of a 4xx: the body's error field, else the body, else the status. */
function appErrorText(text, errorPath, status) {
  try {
    const json = JSON.parse(text);
    const v = jsonPath(json, errorPath);
    if (typeof v === 'string' && v.length > 0) return v;
  } catch {
    // not JSON: fall through
  }
  return text && text.length > 0 && text.length < 256 ? text : `backend HTTP ${status}`;
}


/** Router-supplied text for a log field: printable, bounded. */
const logText = (text) => (text === undefined ? undefined : printable(text, 64));

function lowerKeys(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj || {})) out[k.toLowerCase()] = v;
  return out;
}

module.exports = { Backend };
