'use strict';

// The channels the backend publishes on (docs/diagnostics.md lists them, with each message's
// fields), as undici's lib/core/diagnostics.js: the backend names what happens; metrics, the
// status history and traces subscribe from ops/. Every publisher checks `hasSubscribers` first,
// so a channel nobody listens to costs one property read and builds no message.
//
// Every message carries `gateway`: the owner the gateway gave its backend (the Gateway itself),
// so that a subscriber keeping one gateway's figures counts only its own.

const dc = require('node:diagnostics_channel');
const { performance } = require('node:perf_hooks');
const { KIND } = require('./outcome');

const channels = Object.freeze({
  requestStart: dc.channel('ged145:backend:request:start'),
  requestHeaders: dc.channel('ged145:backend:request:headers'),
  requestEnd: dc.channel('ged145:backend:request:end'),
  requestError: dc.channel('ged145:backend:request:error'),
  requestReconnect: dc.channel('ged145:backend:request:reconnect'),
  failure: dc.channel('ged145:backend:failure'),
  circuit: dc.channel('ged145:backend:circuit'),
  hedge: dc.channel('ged145:backend:hedge'),
  token: dc.channel('ged145:backend:token'),
  handlerError: dc.channel('ged145:backend:handler-error'),
  cacheLookup: dc.channel('ged145:cache:lookup'),
  cacheStoreError: dc.channel('ged145:cache:store-error'),
  shadowResult: dc.channel('ged145:shadow:result'),
  canaryAnswer: dc.channel('ged145:canary:answer'),
  canaryRollback: dc.channel('ged145:canary:rollback'),
});

/** Whether any subscriber wants to see requests one by one: only then is a request's view made. */
const requestsWatched = () => channels.requestStart.hasSubscribers || channels.requestHeaders.hasSubscribers
  || channels.requestEnd.hasSubscribers || channels.requestError.hasSubscribers || channels.requestReconnect.hasSubscribers;

/**
 * What a subscriber sees of one HTTP request (`request` in the request channels' messages), made
 * only while someone watches. sent: the engine's request, which also says whose it is: kind
 * ('query': a query's request, or a handler module's ctx.request; 'token': an OAuth2 token
 * request; 'shadow': a query's copy sent to a candidate, layers/shadow.js), query (null for a
 * token request), route (the subtype whose request it is; null for a token request, or a query
 * without a subtype), template (the route's path before its
 * placeholders were filled; null for a handler module's ctx.request, whose path the handler made),
 * attempt (1, then 2... for the same query's next request: the next origin, a new token after a
 * 401, the hedge) and retry (why it was sent besides the first: null, 'failover', 'auth' or 'hedge'). path is the path sent, which
 * holds caller data where the route's template has placeholders.
 */
class RequestView {
  constructor(owner, sent) {
    this.gateway = owner;
    this.query = sent.query === undefined ? null : sent.query;
    this.kind = sent.kind === undefined ? 'query' : sent.kind;
    this.route = sent.route === undefined ? null : sent.route;
    this.method = sent.method;
    this.origin = sent.origin;
    this.template = sent.template === undefined ? null : sent.template;
    this.path = sent.path;
    this.attempt = sent.attempt === undefined ? 1 : sent.attempt;
    this.retry = sent.retry === undefined ? null : sent.retry;
    this.requestHeaders = sent.headers || {}; // what setHeader changes: the request leaves with these
    this.startedAt = 0;
  }

  /**
   * Sets a header of this request before it leaves (a subscriber of request:start may call it):
   * it replaces any header of that name, whatever its case, so that a header such as traceparent
   * is never sent twice.
   */
  setHeader(name, value) {
    const lower = String(name).toLowerCase();
    const headers = {};
    for (const [k, v] of Object.entries(this.requestHeaders)) if (k.toLowerCase() !== lower) headers[k] = v;
    headers[lower] = String(value);
    this.requestHeaders = headers; // a copy: the route's headers are shared by its requests
  }

  start() {
    this.startedAt = performance.now();
    if (channels.requestStart.hasSubscribers) channels.requestStart.publish({ gateway: this.gateway, query: this.query, request: this });
  }

  /** The status line and headers arrived (the engine calls it). */
  headers(statusCode) {
    if (channels.requestHeaders.hasSubscribers) channels.requestHeaders.publish({ gateway: this.gateway, request: this, statusCode });
  }

  /** The answer was read; result: its classification (ok, app_error, or a host_error's reason). */
  end(statusCode, result) {
    if (channels.requestEnd.hasSubscribers) {
      channels.requestEnd.publish({
        gateway: this.gateway, request: this, statusCode, ms: performance.now() - this.startedAt, result,
      });
    }
  }

  /** No answer (or its body failed); reason: the stable word of outcome.js (timeout, unreachable, reset, aborted...). */
  error(error, reason) {
    if (channels.requestError.hasSubscribers) {
      channels.requestError.publish({
        gateway: this.gateway, request: this, error, reason, ms: performance.now() - this.startedAt,
      });
    }
  }

  /** Its reused keep-alive connection broke before any answer: it is being sent again on another (the engine calls it). */
  reconnect() {
    if (channels.requestReconnect.hasSubscribers) channels.requestReconnect.publish({ gateway: this.gateway, request: this });
  }
}

/** An outcome of outcome.js as a request's result: ok, app_error, or the host_error's reason. */
const resultOf = (outcome) => (outcome.kind === KIND.HOST_ERROR ? outcome.reason : outcome.kind);

/**
 * A new view of a request while the request channels have subscribers, started (a subscriber may
 * set headers then): the engine gets it beside the request as its observer, and sends the view's
 * headers (engines/index.js). null: nobody watches.
 */
function watch(owner, request) {
  if (!requestsWatched()) return null;
  const view = new RequestView(owner, request);
  view.start();
  return view;
}

/** A failure the backend counts against an origin (backend_failures_total): the outcome's reason. */
function publishFailure(owner, origin, outcome) {
  if (channels.failure.hasSubscribers) {
    channels.failure.publish({
      gateway: owner, origin, reason: outcome.reason, detail: outcome.detail === undefined ? null : outcome.detail,
    });
  }
}

/**
 * A hedge decided (layers/failover.js): won (its answer was the query's), lost (the first
 * request's outcome was: the hedge was aborted, or failed), over_budget (due, not sent). origin:
 * where the hedge went, or would have.
 */
function publishHedge(owner, query, result, origin) {
  if (channels.hedge.hasSubscribers) {
    channels.hedge.publish({
      gateway: owner, query, result, origin,
    });
  }
}

module.exports = {
  channels, watch, resultOf, publishFailure, publishHedge,
};
