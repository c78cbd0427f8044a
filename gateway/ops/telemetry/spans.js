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
//
// The query span follows OpenTelemetry's RPC server conventions (semantic-conventions 1.37, "RPC
// spans"): rpc.system `ged145` (a custom system, as the conventions allow), rpc.method the
// subtype, the router as client.address/port and network.peer.address/port, and error.type on
// every query that failed (its outcome label).
//
// Sampled at 100 %, two spans a query: what every span of a session or a route shares (the
// router's address, the backend's server.*, the span name, a url.full without caller data) is
// built once and kept, not per span; the traceparent is written from the span's ids, not through
// a context and a propagator.

const dc = require('node:diagnostics_channel');
const {
  trace, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags,
} = require('@opentelemetry/api');
const { urlFull, urlTemplate, isCallerData } = require('./span-url');
const { isFailed } = require('../../backend/outcome');
const { CALLER_FIELDS } = require('../../../lib/query-fields');
const { text } = require('../../../lib/protocol');
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const RPC_SYSTEM = 'ged145';
const MAX_NAME = 64;
/** Subtypes and routes whose names and attributes are kept; past it a cache starts afresh (a router can send any subtype). */
const MAX_KEPT = 512;
const present = (v) => v !== undefined && v !== null;
const CLIENT = Object.freeze({ kind: SpanKind.CLIENT });

/** Subtypes are the router's text: printable, short, so that a span name stays one line. */
const printable = (subtype) => text.printable(subtype, MAX_NAME);

/** W3C Trace Context's traceparent (version 00) of a span of ours: always valid, no tracestate. */
const traceparentOf = (ctx) => `00-${ctx.traceId}-${ctx.spanId}-${(ctx.traceFlags & TraceFlags.SAMPLED) !== 0 ? '01' : '00'}`;

/** map.get(key), or make(key) kept in it; the map is emptied when it holds MAX_KEPT. */
function kept(map, key, make) {
  let value = map.get(key);
  if (value === undefined) {
    if (map.size >= MAX_KEPT) map.clear();
    value = make(key);
    map.set(key, value);
  }
  return value;
}

function serverOf(origin) {
  try {
    const url = new URL(origin);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return { 'server.address': url.hostname, 'server.port': port, 'url.scheme': url.protocol.slice(0, -1) };
  } catch {
    return {};
  }
}

/** The router end of a session ("address:port", IPv6 too): the RPC server span's peer attributes. */
function peerOf(peer) {
  const out = { 'rpc.system': RPC_SYSTEM, 'network.transport': 'tcp' };
  const at = typeof peer === 'string' ? peer.lastIndexOf(':') : -1;
  if (at <= 0) return Object.freeze(out);
  const address = peer.slice(0, at);
  const port = Number(peer.slice(at + 1));
  out['client.address'] = address;
  out['network.peer.address'] = address;
  if (Number.isInteger(port) && port > 0) {
    out['client.port'] = port;
    out['network.peer.port'] = port;
  }
  return Object.freeze(out);
}

/** What a subtype's query spans share: the name and rpc.method. */
function subtypeOf(subtype) {
  const method = printable(subtype);
  return { name: `ged145 query ${method}`, method };
}

/**
 * What every span of one route's requests shares (origin, method, template): its name and
 * attributes, and url.full when no placeholder of the template is filled with anything but caller
 * data (REDACTED, the same for every request).
 */
class RequestShape {
  constructor(origin, rawMethod, template, callerData) {
    this.origin = origin;
    this.rawMethod = rawMethod;
    const upper = String(rawMethod).toUpperCase();
    const method = HTTP_METHODS.has(upper) ? upper : '_OTHER';
    this.template = template === null ? null : urlTemplate(template);
    this.name = this.template !== null ? `${method} ${this.template}` : method;
    const attributes = { 'http.request.method': method, ...serverOf(origin) };
    if (method === '_OTHER') attributes['http.request.method_original'] = String(rawMethod);
    if (this.template !== null) attributes['url.template'] = this.template;
    this.attributes = Object.freeze(attributes);
    const onlyCallerData = template !== null && [...template.matchAll(/\{([^{}]+)\}/g)].every((m) => isCallerData(m[1]));
    this.urlFull = !callerData && onlyCallerData ? urlFull({ origin, template, kind: 'query', query: null }, false) : null;
  }
}

class QuerySpans {
  constructor(tracer, { callerData }) {
    this.gateway = null; // the one whose queries are traced (one process may hold others: the warm-up's, tests')
    this.tracer = tracer;
    this.callerData = callerData;
    this.queries = new WeakMap(); // query -> its span
    this.requests = new WeakMap(); // backend request -> its span
    this.peers = new WeakMap(); // session -> its query spans' peer attributes
    this.subtypes = new Map(); // subtype -> {name, method}
    this.shapes = new Map(); // origin -> Map(template -> RequestShape)
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
    return this.gateway === null || owner === this.gateway || (present(owner) && (owner.gateway === this.gateway || owner === this.gateway.backend));
  }

  /** The span of the query a backend request is for: the query as query:start gave it, or the core's query whose view that was. */
  parentOf(query) {
    if (!present(query)) return undefined;
    return this.queries.get(query) || (present(query.view) ? this.queries.get(query.view) : undefined);
  }

  queryStart({ gateway, session, query }) {
    if (gateway !== this.gateway) return; // another gateway's (the warm-up's), or before attach(): no query is read then
    const { name, method } = kept(this.subtypes, query.subtype, subtypeOf);
    const span = this.tracer.startSpan(name, { kind: SpanKind.SERVER, startTime: query.receivedAt });
    this.queries.set(query, span);
    query.labels.trace_id = span.spanContext().traceId;
    if (!span.isRecording()) return;
    let peer = this.peers.get(session);
    if (peer === undefined) {
      peer = peerOf(session.peer);
      this.peers.set(session, peer);
    }
    span.setAttributes(peer);
    span.setAttribute('rpc.method', method);
    span.setAttribute('ged145.query.subtype', method);
    span.setAttribute('ged145.query.invoke_id', query.invokeId);
    span.setAttribute('ged145.session.id', session.id);
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
      // The router got no usable answer (outcome.js's failed labels; app_error is the API's answer): an error, typed by its label.
      if (isFailed(outcome)) {
        span.setAttribute('error.type', outcome);
        span.setStatus({ code: SpanStatusCode.ERROR, message: status || outcome });
      }
    }
    span.end();
  }

  requestStart({ gateway, query, request }) {
    const parent = this.parentOf(query);
    if (parent === undefined && !this.owns(gateway)) return; // another gateway's (the warm-up's), or nobody's
    const context = parent === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, parent);
    const shape = this.shapeOf(request);
    const span = this.tracer.startSpan(shape.name, CLIENT, context);
    this.requests.set(request, span);
    // Exactly one traceparent: setHeader replaces, never adds (docs/diagnostics.md).
    request.setHeader('traceparent', traceparentOf(span.spanContext()));
    if (!span.isRecording()) return;
    span.setAttributes(shape.attributes);
    span.setAttribute('url.full', shape.urlFull !== null && request.kind !== 'token' ? shape.urlFull : urlFull(request, this.callerData));
    span.setAttribute('ged145.backend.kind', request.kind);
    span.setAttribute('ged145.backend.route', !present(request.route) ? '' : String(request.route));
    if (request.attempt > 1) span.setAttribute('http.request.resend_count', request.attempt - 1);
    if (present(request.retry)) span.setAttribute('ged145.backend.retry', String(request.retry));
  }

  /** The request's RequestShape, made once per origin, template and method. */
  shapeOf(request) {
    const origin = request.origin || '';
    const template = request.template ? request.template : null;
    let byTemplate = this.shapes.get(origin);
    if (byTemplate === undefined) {
      if (this.shapes.size >= MAX_KEPT) this.shapes.clear();
      byTemplate = new Map();
      this.shapes.set(origin, byTemplate);
    }
    let shape = byTemplate.get(template);
    if (shape === undefined || shape.rawMethod !== request.method) {
      if (byTemplate.size >= MAX_KEPT) byTemplate.clear();
      shape = new RequestShape(origin, request.method, template, this.callerData);
      byTemplate.set(template, shape);
    }
    return shape;
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

module.exports = { QuerySpans };
