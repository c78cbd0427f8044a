'use strict';

// A handler module's route: its code called in the route's scope (user-code.js), with ctx.request,
// an HTTP request down the backend's layers below the route (layers/), and what its answer or its
// error means for the router. The route layer (layers/route.js) makes it and calls it.

const {
  ok, appError, hostError, REASON, KIND,
} = require('./outcome');
const { queryJson } = require('./request');
const { asAbortSignal } = require('./abort');
const { statusReason } = require('./statuses');
const { runAs, currentCall, markError } = require('./user-code');
const { messageOf } = require('../../lib/errors');
const { BackendRequestError } = require('./errors');
const { hideCallerData } = require('../../lib/redact');
const { isObject } = require('../objects');
const { text: { printable } } = require('../../lib/protocol');

/** Router-supplied text for a log field: printable, bounded. */
const logText = (text) => (text === undefined ? undefined : printable(text, 64));

class ModuleCalls {
  /**
   * next: the layers a ctx.request goes down; deadlineMs, log, throttle (the route layer's), redact
   * (log.redact); faults: HandlerFaults; scopes: compiled route -> its scope (user-code.js);
   * credentialsFor(route, origin) and headersFor(route, origin): what a ctx.request to origin carries.
   */
  constructor(next, {
    deadlineMs, log, throttle, redact, faults, scopes, credentialsFor, headersFor,
  }) {
    this.next = next;
    this.deadlineMs = deadlineMs;
    this.log = log;
    this.throttle = throttle;
    this.redact = redact;
    this.faults = faults;
    this.scopes = scopes;
    this.credentialsFor = credentialsFor;
    this.headersFor = headersFor;
  }

  /** One query for a module route: the handler's answer as an outcome. */
  async call(route, q, signal, deadlineAt) {
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
      return this.failed(route, q, err, signal, moduleSignal);
    }
  }

  /** What a handler's error means for the router; signal: the query's, moduleSignal: the handler's (the route's timeoutMs too). */
  failed(route, q, err, signal, moduleSignal) {
    // A ctx.request that got no answer: the handler let it through; its outcome was counted already.
    if (err instanceof BackendRequestError) return err.outcome;
    if (signal.aborted) return hostError(REASON.ABORTED, 'backend aborted');
    if (moduleSignal.aborted) return hostError(REASON.TIMEOUT, `handler did not answer within ${route.timeoutMs} ms (the route's timeoutMs)`);
    if (err && err.appError) return appError(String(err.message || 'rejected'));
    const status = err ? Number(err.status || err.statusCode) : NaN;
    if (status >= 100 && status < 600) {
      const thrown = thrownStatus(route, status, err);
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

  /**
   * ctx.request for a handler module: an HTTP request through the backend (its engine, TLS, proxy
   * and keep-alive retry; the route's own auth; the origin's circuit, figures and health). The
   * backend's own headers and auth go only to backend.url's origins, unless the route asks for
   * them everywhere (scope.js). Resolves {status, text, json()} for any HTTP answer; rejects with a
   * BackendRequestError (its `reason` one of outcome.js's) when there is none, which the handler
   * may catch or let through.
   */
  requestFor(route, q, signal, deadlineAt, group) {
    const from = {
      route, q, signal, deadlineAt, group,
    };
    // Its rejections are marked as the calling handler's: one it does not await is attributed to its route.
    return (url, options) => {
      const call = currentCall();
      return this.request(from, url, options).catch((err) => {
        throw markError(err, call);
      });
    };
  }

  /** One ctx.request (requestFor); from: the route and query it is made for. */
  async request(from, url, {
    method = 'GET', headers = {}, body, json,
  } = {}) {
    const m = /^(https?:\/\/[^/?#]+)(.*)$/.exec(String(url));
    if (m === null) throw new TypeError(`ctx.request: ${url} is not an http:// or https:// URL`);
    const outcome = await this.next.dispatch({
      origin: m[1],
      path: m[2] === '' ? '/' : m[2],
      method: String(method).toUpperCase(),
      headers: { ...this.headersFor(from.route, m[1]), ...lowerKeys(headers) },
      body: json === undefined ? body : JSON.stringify(json),
      signal: from.signal,
      idempotent: from.route.idempotent,
      group: from.group,
      spec: from.route,
      forHandler: true,
      credentials: this.credentialsFor(from.route, m[1]),
      deadlineAt: from.deadlineAt,
      timeoutMs: undefined,
      elsewhere: false,
      kind: 'query',
      query: from.q,
      route: from.q.subtype === undefined ? null : from.q.subtype,
      template: null, // the handler made the path
      attempt: 1,
      retry: null,
    });
    if (outcome.response === undefined) throw new BackendRequestError(outcome);
    const { status, text } = outcome.response;
    return { status, text, json: () => JSON.parse(text) };
  }
}

/**
 * A handler's thrown error that carries an HTTP status (err.status or err.statusCode), read as
 * the route's statuses say, else as the default table does without a body (the handler chose
 * to throw: a 4xx but 408 and 429 is its "no"); null for a status that means a failure of the
 * handler (the caller then gets module_error, logged).
 */
function thrownStatus(route, status, err) {
  const mapped = route.statuses === null ? undefined : route.statuses.get(status);
  const text = String(err.message || 'rejected');
  if (mapped === KIND.APP_ERROR) return appError(text);
  if (mapped === KIND.OK) return ok({});
  if (mapped === KIND.HOST_ERROR) return hostError(statusReason(status), `handler module answered HTTP ${status}`);
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return appError(text);
  if (status === 408 || status === 429) return hostError(statusReason(status), `handler module answered HTTP ${status}`);
  return null;
}

function lowerKeys(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj || {})) out[k.toLowerCase()] = v;
  return out;
}

module.exports = { ModuleCalls, logText };
