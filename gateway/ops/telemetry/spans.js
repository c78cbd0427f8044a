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
// router's address, the session's id, the subtype, the backend's server.*, the span name, a
// url.full without caller data) is built once and kept, not per span. Exported as OTLP protobuf
// (otlp-protobuf.js), those attributes are not even set on each span: the span lists them
// (SHARED), and they are encoded once for all spans; the JSON exporter reads a span's attributes
// only, so there they are set. The traceparent is written from the span's ids, not through a
// context and a propagator.

const dc = require('node:diagnostics_channel');
const { SpanKind, SpanStatusCode, TraceFlags } = require('@opentelemetry/api');
const { urlFull, urlTemplate, isCallerData } = require('./span-url');
const { isFailed } = require('../../backend/outcome');
const { CALLER_FIELDS } = require('../../../lib/query-fields');
const { text } = require('../../../lib/protocol');
const { SharedAttributes, SHARED } = require('./otlp-protobuf');
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const RPC_SYSTEM = 'ged145';
const MAX_NAME = 64;
/** Subtypes and routes whose names and attributes are kept; past it a cache starts afresh (a router can send any subtype). */
const MAX_KEPT = 512;
const present = (v) => v !== undefined && v !== null;

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

/** What a subtype's query spans share: the name, rpc.method and ged145.query.subtype. */
function subtypeOf(subtype) {
  const method = printable(subtype);
  return { name: `ged145 query ${method}`, attributes: new SharedAttributes({ 'rpc.method': method, 'ged145.query.subtype': method }) };
}

/** What a session's query spans share: the router's end and the session's id; and, by subtype, the list a span of it shares. */
class SessionShape {
  constructor(session) {
    this.attributes = new SharedAttributes({ ...peerOf(session.peer), 'ged145.session.id': session.id });
    this.lists = new Map(); // subtypeOf() -> [this.attributes, its attributes]
  }

  sharedWith(subtype) {
    return kept(this.lists, subtype, () => Object.freeze([this.attributes, subtype.attributes]));
  }
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
    this.attributes = Object.freeze([new SharedAttributes(attributes)]);
    const onlyCallerData = template !== null && [...template.matchAll(/\{([^{}]+)\}/g)].every((m) => isCallerData(m[1]));
    const full = !callerData && onlyCallerData ? urlFull({ origin, template, kind: 'query', query: null }, false) : null;
    /** The attributes with url.full, for a query's request (a token request's URL is its own), or null: url.full is per request. */
    this.withUrl = full === null ? null : Object.freeze([new SharedAttributes({ ...attributes, 'url.full': full })]);
  }
}

class QuerySpans {
  /** sharedAttributes: the exporter encodes a span's SHARED list (OTLP protobuf); false: shared attributes are set on each span. */
  constructor(tracer, { callerData, sharedAttributes = false }) {
    this.gateway = null; // the one whose queries are traced (one process may hold others: the warm-up's, tests')
    this.tracer = tracer;
    this.callerData = callerData;
    this.sharedAttributes = sharedAttributes;
    this.queries = new WeakMap(); // a query's decoded QUERY_REQ (its view's fields) -> its span
    this.requests = new WeakMap(); // backend request -> its span
    this.sessions = new WeakMap(); // session -> its SessionShape
    this.subtypes = new Map(); // subtype -> {name, attributes}
    this.shapes = new Map(); // origin -> Map(template -> RequestShape)
    this.handlers = {
      'ged145:query:start': (m) => this.queryStart(m),
      'ged145:query:settle': (m) => this.querySettle(m),
      'ged145:backend:request:start': (m) => this.requestStart(m),
      'ged145:backend:request:headers': (m) => this.requestHeaders(m),
      'ged145:backend:request:end': (m) => this.requestEnd(m),
      'ged145:backend:request:error': (m) => this.requestError(m),
      'ged145:backend:request:reconnect': (m) => this.requestReconnect(m),
      'ged145:canary:answer': (m) => this.canaryAnswer(m),
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

  /**
   * The span of the query a backend request is for. The backend's channels give the decoded
   * QUERY_REQ, which is the `fields` of the view query:start gave: spans are kept by it (a token
   * request's null query finds none: a WeakMap has no entry for what is not an object).
   */
  parentOf(query) {
    return this.queries.get(query);
  }

  queryStart({ gateway, session, query }) {
    if (gateway !== this.gateway) return; // another gateway's (the warm-up's), or before attach(): no query is read then
    const subtype = kept(this.subtypes, query.subtype, subtypeOf);
    const span = this.tracer.startSpan(subtype.name, SpanKind.SERVER, undefined, query.receivedAt);
    this.queries.set(query.fields, span);
    query.labels.trace_id = span.spanContext().traceId;
    if (!span.isRecording()) return;
    let shape = this.sessions.get(session);
    if (shape === undefined) {
      shape = new SessionShape(session);
      this.sessions.set(session, shape);
    }
    this.share(span, shape.sharedWith(subtype));
    span.setAttribute('ged145.query.invoke_id', query.invokeId);
    if (present(query.side)) span.setAttribute('ged145.query.side', String(query.side));
    if (this.callerData && query.fields) {
      for (const k of CALLER_FIELDS) if (present(query.fields[k])) span.setAttribute(`ged145.query.${k}`, String(query.fields[k]));
    }
  }

  querySettle({ query, outcome, status, late }) {
    const span = this.queries.get(query.fields);
    if (span === undefined) return;
    this.queries.delete(query.fields);
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

  /** A canary's candidate answers the query: its span says which, so a trace tells a canary answer from the live route's. */
  canaryAnswer({ query, candidate }) {
    const span = this.parentOf(query);
    if (span !== undefined && span.isRecording()) span.setAttribute('ged145.canary.candidate', candidate);
  }

  requestStart({ gateway, query, request }) {
    const parent = this.parentOf(query);
    if (parent === undefined && !this.owns(gateway)) return; // another gateway's (the warm-up's), or nobody's
    const shape = this.shapeOf(request);
    const span = this.tracer.startSpan(shape.name, SpanKind.CLIENT, parent);
    this.requests.set(request, span);
    // Exactly one traceparent: setHeader replaces, never adds (docs/diagnostics.md).
    request.setHeader('traceparent', traceparentOf(span.spanContext()));
    if (!span.isRecording()) return;
    if (shape.withUrl !== null && request.kind !== 'token') this.share(span, shape.withUrl);
    else {
      this.share(span, shape.attributes);
      span.setAttribute('url.full', urlFull(request, this.callerData));
    }
    span.setAttribute('ged145.backend.kind', request.kind);
    span.setAttribute('ged145.backend.route', !present(request.route) ? '' : String(request.route));
    if (request.attempt > 1) span.setAttribute('http.request.resend_count', request.attempt - 1);
    if (present(request.retry)) span.setAttribute('ged145.backend.retry', String(request.retry));
  }

  /** Attributes many spans share, each list built once: listed on the span for the protobuf encoding, or set on it. */
  share(span, list) {
    if (this.sharedAttributes) span[SHARED] = list;
    else for (const shared of list) span.setAttributes(shared.attributes);
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
