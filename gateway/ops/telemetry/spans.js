'use strict';

// Spans from the core's diagnostics channels (docs/diagnostics.md): one SERVER span per QUERY_REQ,
// `ged145 query <subtype>`, and below it one CLIENT span per backend HTTP request, each retry and
// each token request its own, named and described by OpenTelemetry's HTTP client semantic
// conventions. Each backend request gets exactly one W3C traceparent through the request's own
// setHeader, which replaces any header of that name: the request never carries two, the mistake
// that makes a W3C propagator drop both.
//
// Caller data (CLID, DN, CED, CDPD, VAR and ECC values, and a URL's placeholders filled with them)
// stays out of spans unless the operator sets telemetry.traces.callerData, and a query string's
// values (an API key written into a route's URL) stay out always: a backend span's URL is the one
// sent with those values REDACTED (span-url.js), and an error span carries its stable reason,
// never an error message (which can quote the URL).

const dc = require('node:diagnostics_channel');
const { trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } = require('@opentelemetry/api');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { urlFull, urlTemplate } = require('./span-url');

/** Outcomes that are the gateway's or the backend's failure; an app_error is the API's answer ("no such caller"). */
const FAILED_OUTCOMES = new Set(['host_error', 'deadline', 'lost_router_gone']);
const CALLER_FIELDS = ['clid', 'dn', 'ced', 'cdpd'];
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const MAX_NAME = 64;
const present = (v) => v !== undefined && v !== null;

const headerSetter = { set: (request, name, value) => request.setHeader(name, value) };
const propagator = new W3CTraceContextPropagator();

/** Subtypes are the router's text: printable, short, so that a span name stays one line. */
const printable = (text) => String(text).replace(/[^\x20-\x7e]/g, '?').slice(0, MAX_NAME);

function serverOf(origin) {
  try {
    const url = new URL(origin);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return { 'server.address': url.hostname, 'server.port': port, 'url.scheme': url.protocol.slice(0, -1) };
  } catch {
    return {};
  }
}

class QuerySpans {
  constructor(tracer, { callerData }) {
    this.gateway = null; // the one whose queries are traced (one process may hold others: the warm-up's, tests')
    this.tracer = tracer;
    this.callerData = callerData;
    this.queries = new WeakMap(); // query -> its span
    this.requests = new WeakMap(); // backend request -> its span
    this.handlers = {
      'ged145:query:start': (m) => this.queryStart(m),
      'ged145:query:settle': (m) => this.querySettle(m),
      'ged145:backend:request:start': (m) => this.requestStart(m),
      'ged145:backend:request:headers': (m) => this.requestHeaders(m),
      'ged145:backend:request:end': (m) => this.requestEnd(m),
      'ged145:backend:request:error': (m) => this.requestError(m),
      'ged145:backend:request:reconnect': (m) => this.requestReconnect(m),
    };
  }

  attach(gateway) {
    this.gateway = gateway;
  }

  subscribe() {
    for (const [name, fn] of Object.entries(this.handlers)) dc.subscribe(name, fn);
    return this;
  }

  unsubscribe() {
    for (const [name, fn] of Object.entries(this.handlers)) dc.unsubscribe(name, fn);
  }

  /**
   * A backend message without a query (a token request) names the backend's owner: the gateway
   * itself, or an object of its that knows it. Before attach() (the gateway's constructor, which
   * is synchronous and sends its first token request) everything is its.
   */
  owns(owner) {
    return this.gateway === null || owner === this.gateway || (present(owner) && (owner.gateway === this.gateway || owner === this.gateway.resolver));
  }

  /** The span of the query a backend request is for: the query as query:start gave it, or the core's query whose view that was. */
  parentOf(query) {
    if (!present(query)) return undefined;
    return this.queries.get(query) || (present(query.view) ? this.queries.get(query.view) : undefined);
  }

  queryStart({ gateway, session, query }) {
    if (gateway !== this.gateway) return; // another gateway's (the warm-up's), or before attach(): no query is read then
    const span = this.tracer.startSpan(`ged145 query ${printable(query.subtype)}`, { kind: SpanKind.SERVER, startTime: query.receivedAt });
    this.queries.set(query, span);
    query.labels.trace_id = span.spanContext().traceId;
    if (!span.isRecording()) return;
    span.setAttributes({
      'ged145.query.subtype': printable(query.subtype),
      'ged145.query.invoke_id': query.invokeId,
      'ged145.session.id': session.id,
    });
    if (present(query.side)) span.setAttribute('ged145.query.side', String(query.side));
    if (this.callerData && query.fields) {
      for (const k of CALLER_FIELDS) if (present(query.fields[k])) span.setAttribute(`ged145.query.${k}`, String(query.fields[k]));
    }
  }

  querySettle({ query, outcome, status, late }) {
    const span = this.queries.get(query);
    if (span === undefined) return;
    this.queries.delete(query);
    if (span.isRecording()) {
      span.setAttribute('ged145.query.outcome', outcome);
      if (present(status)) span.setAttribute('ged145.query.status', status);
      if (late) span.setAttribute('ged145.query.late', true);
      if (FAILED_OUTCOMES.has(outcome)) span.setStatus({ code: SpanStatusCode.ERROR, message: status || outcome });
    }
    span.end();
  }

  requestStart({ gateway, query, request }) {
    const parent = this.parentOf(query);
    if (parent === undefined && !this.owns(gateway)) return; // another gateway's (the warm-up's), or nobody's
    const context = parent === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, parent);
    const method = HTTP_METHODS.has(String(request.method).toUpperCase()) ? String(request.method).toUpperCase() : '_OTHER';
    const template = request.template ? urlTemplate(request.template) : null;
    const span = this.tracer.startSpan(template !== null ? `${method} ${template}` : method, { kind: SpanKind.CLIENT }, context);
    this.requests.set(request, span);
    // Exactly one traceparent: setHeader replaces, never adds (docs/diagnostics.md).
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), request, headerSetter);
    if (!span.isRecording()) return;
    span.setAttributes({
      'http.request.method': method,
      ...serverOf(request.origin),
      'url.full': urlFull(request, this.callerData),
      'ged145.backend.kind': request.kind,
      'ged145.backend.route': !present(request.route) ? '' : String(request.route),
    });
    if (method === '_OTHER') span.setAttribute('http.request.method_original', String(request.method));
    if (template !== null) span.setAttribute('url.template', template);
    if (request.attempt > 1) span.setAttribute('http.request.resend_count', request.attempt - 1);
    if (present(request.retry)) span.setAttribute('ged145.backend.retry', String(request.retry));
  }

  requestHeaders({ request, statusCode }) {
    const span = this.requests.get(request);
    if (span !== undefined && span.isRecording()) span.setAttribute('http.response.status_code', statusCode);
  }

  requestEnd({ request, statusCode, result }) {
    const span = this.requests.get(request);
    if (span === undefined) return;
    this.requests.delete(request);
    if (span.isRecording()) {
      span.setAttribute('http.response.status_code', statusCode);
      if (present(result)) span.setAttribute('ged145.backend.result', result);
      // The HTTP client conventions: a 4xx or 5xx is an error of the client span, typed by its status.
      if (statusCode >= 400) {
        span.setAttribute('error.type', String(statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    span.end();
  }

  /** Sent again on another connection (a reused one broke first): the same request, the same span and traceparent. */
  requestReconnect({ request }) {
    const span = this.requests.get(request);
    if (span !== undefined && span.isRecording()) span.addEvent('ged145.backend.reconnect');
  }

  requestError({ request, reason }) {
    const span = this.requests.get(request);
    if (span === undefined) return;
    this.requests.delete(request);
    if (span.isRecording()) {
      span.setAttribute('error.type', reason || '_OTHER');
      span.setStatus({ code: SpanStatusCode.ERROR, message: reason || undefined });
    }
    span.end();
  }
}

module.exports = { QuerySpans, FAILED_OUTCOMES };
