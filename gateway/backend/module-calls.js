'use strict';

// A handler module's route: its code called in the route's scope (user-code.js), with ctx.request,
// an HTTP request through the backend's layers (layers.js), and what its answer or its error
// means for the router.

const {
  ok, appError, hostError, REASON, KIND,
} = require('./outcome');
const { queryJson } = require('./request');
const { asAbortSignal } = require('./abort');
const { statusReason } = require('./statuses');
const { runAs, currentCall, markError } = require('./user-code');
const { whose } = require('./diagnostics');
const { messageOf } = require('../../lib/errors');
const { BackendRequestError } = require('./errors');
const { hideCallerData } = require('../../lib/redact');
const { isObject } = require('../../lib/objects');
const { text: { printable } } = require('../../lib/protocol');

/** Router-supplied text for a log field: printable, bounded. */
const logText = (text) => (text === undefined ? undefined : printable(text, 64));

class ModuleCalls {
  /**
   * backend: the Backend whose routes these are: its deadlineMs, log, throttle, redact, faults,
   * scopes (compiled route -> its scope), the headers and credentials each origin gets
   * (credentialsFor, headersFor) and its layers (send).
   */
  constructor(backend) {
    this.backend = backend;
  }

  /** One query for a module route: the handler's answer as an outcome. */
  async call(route, q, signal, deadlineAt) {
    const b = this.backend;
    let moduleSignal = asAbortSignal(signal);
    if (route.timeoutMs < b.deadlineMs) moduleSignal = AbortSignal.any([moduleSignal, AbortSignal.timeout(route.timeoutMs)]);
    const ctx = { signal: moduleSignal, request: this.requestFor(route, q, moduleSignal, deadlineAt, signal.group) };
    const scope = b.scopes.get(route);
    try {
      const query = queryJson(q);
      // In the route's scope: what the handler starts and does not finish is known to be its own.
      const answer = await runAs(scope, query, route.handle, query, ctx);
      // As a REST answer must be a JSON object (bad_json), a handler's must be an object.
      if (!isObject(answer)) {
        b.faults.badAnswer(scope, answer, logText(q.subtype), q.invokeId);
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
    const b = this.backend;
    const n = b.throttle.hit('module-error');
    if (n) {
      const text = b.redact ? hideCallerData(messageOf(err), q) : messageOf(err);
      b.log.error(`handler module failed: ${text}`, { module: route.file, subtype: logText(q.subtype), invokeId: q.invokeId, count: n });
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
    const b = this.backend;
    const request = {
      origin: m[1],
      path: m[2] === '' ? '/' : m[2],
      method: String(method).toUpperCase(),
      headers: { ...b.headersFor(from.route, m[1]), ...lowerKeys(headers) },
      body: json === undefined ? body : JSON.stringify(json),
      signal: from.signal,
      idempotent: from.route.idempotent,
      group: from.group,
      spec: from.route,
      forHandler: true,
      credentials: b.credentialsFor(from.route, m[1]),
      deadlineAt: from.deadlineAt,
      timeoutMs: undefined,
      elsewhere: false,
    };
    whose(request, from.q, null, 1);
    const outcome = await b.send.dispatch(request);
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
