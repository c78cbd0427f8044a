'use strict';

// The OTLP/protobuf encoding of a batch of the gateway's spans (ExportTraceServiceRequest,
// opentelemetry-proto trace/v1 and collector/trace/v1), handed to the official exporters'
// transports (tracer.js), so that retries, timeouts, headers, compression and the OTEL_* settings
// stay theirs. Sampled at 100 %, every query is two spans, and encoding them with the
// otlp-transformer package was the largest part of what traces cost the gateway: it sizes every
// span in a first pass and writes it in a second, and writes every attribute from its key and
// value each time. Here what a session's or a route's spans share is encoded once
// (SharedAttributes, attached to a span under SHARED instead of set on it), and so are the
// resource, the scope, span names and attribute keys; a span is written in one pass into a buffer
// kept from batch to batch, each length-delimited message after a gap as wide as the largest
// length prefix, moved back once its length is known.
//
// The bytes decode to what the official serializer's do for the same span, field for field (status
// and flags included; a count of zero, which proto3 reads the same whether written or not, is left
// out), with the shared attributes after the span's own; a batch whose spans come
// from more than one resource or scope (never the gateway's: one recorder) is left to
// the official serializer whole.

const { Writer, GAP, varintSize } = require('./protobuf-writer');

/** A span's attributes that many spans share (one session's, one route's): frozen, encoded once, on first export. */
class SharedAttributes {
  constructor(attributes) {
    this.attributes = Object.freeze({ ...attributes });
    this.encoded = null;
  }
}

/** The property of a span that lists its SharedAttributes (spans.js sets it; only this encoding reads it). */
const SHARED = Symbol('ged145.sharedAttributes');

const MAX_KEPT = 1024; // names and keys encoded and kept; past it the cache starts afresh
const SPAN_FLAGS_HAS_IS_REMOTE = 0x100; // trace/v1 SpanFlags: the flags say whether the parent is remote
const SPAN_FLAGS_IS_REMOTE = 0x200;
const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

const tag = (field, wireType) => (field << 3) | wireType;
const LEN = 2;
const VARINT = 0;
const I64 = 1;
const I32 = 5;

/** text -> its UTF-8 bytes with their length prefix, kept (names and keys repeat). */
const lengthPrefixed = new Map();
function prefixed(text) {
  let bytes = lengthPrefixed.get(text);
  if (bytes === undefined) {
    if (lengthPrefixed.size >= MAX_KEPT) lengthPrefixed.clear();
    const w = new Writer(Buffer.byteLength(text) + GAP);
    w.string(text);
    bytes = Buffer.from(w.buf.subarray(0, w.pos));
    lengthPrefixed.set(text, bytes);
  }
  return bytes;
}

/** common/v1 AnyValue's fields, as the official serializer maps an attribute value. */
function writeAnyValue(w, value) {
  if (typeof value === 'string') {
    w.uint32(tag(1, LEN));
    w.string(value);
  } else if (typeof value === 'boolean') {
    w.uint32(tag(2, VARINT));
    w.uint32(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64) {
      w.uint32(tag(3, VARINT));
      w.int64(value);
    } else {
      w.uint32(tag(4, I64));
      w.double(value);
    }
  } else if (value instanceof Uint8Array) {
    w.uint32(tag(7, LEN));
    w.uint32(value.length);
    w.raw(value);
  } else if (Array.isArray(value)) {
    w.uint32(tag(5, LEN));
    const array = w.open();
    for (const item of value) {
      w.uint32(tag(1, LEN));
      const any = w.open();
      if (item !== null && item !== undefined) writeAnyValue(w, item);
      w.close(any);
    }
    w.close(array);
  } else if (typeof value === 'object' && value !== null) {
    w.uint32(tag(6, LEN));
    const list = w.open();
    writeAttributes(w, value, 1);
    w.close(list);
  }
}

/**
 * A KeyValue of a string, a small integer or a boolean, its lengths known before it is written
 * (the values of nearly every attribute the gateway sets): no gap to move back. False for any other.
 */
function writeSimpleKeyValue(w, key, value, field) {
  let any;
  let n = 0;
  if (typeof value === 'string') {
    n = Buffer.byteLength(value);
    any = 1 + varintSize(n) + n;
  } else if (typeof value === 'number' && value >= 0 && value < 2 ** 32 && Number.isInteger(value)) any = 1 + varintSize(value);
  else if (typeof value === 'boolean') any = 2;
  else return false;
  const k = prefixed(key);
  w.uint32(tag(field, LEN));
  w.uint32(1 + k.length + 1 + varintSize(any) + any);
  w.uint32(tag(1, LEN));
  w.raw(k);
  w.uint32(tag(2, LEN));
  w.uint32(any);
  if (typeof value === 'string') {
    w.uint32(tag(1, LEN));
    w.uint32(n);
    w.ensure(n);
    w.pos += w.buf.utf8Write(value, w.pos, n);
  } else if (typeof value === 'number') {
    w.uint32(tag(3, VARINT));
    w.uint32(value);
  } else {
    w.uint32(tag(2, VARINT));
    w.uint32(value ? 1 : 0);
  }
  return true;
}

/** Each attribute as a KeyValue in field `field` of the message being written. */
function writeAttributes(w, attributes, field) {
  for (const key in attributes) {
    const value = attributes[key];
    if (value === undefined || writeSimpleKeyValue(w, key, value, field)) continue;
    w.uint32(tag(field, LEN));
    const kv = w.open();
    w.uint32(tag(1, LEN));
    w.raw(prefixed(key));
    w.uint32(tag(2, LEN));
    const any = w.open();
    writeAnyValue(w, value);
    w.close(any);
    w.close(kv);
  }
}

/** Span.attributes (field 9) of a SharedAttributes, as bytes to append to each span that shares them. */
function encodedOf(shared) {
  if (shared.encoded === null) {
    const w = new Writer(256);
    writeAttributes(w, shared.attributes, 9);
    shared.encoded = Buffer.from(w.buf.subarray(0, w.pos));
  }
  return shared.encoded;
}

function writeStatus(w, status) {
  w.uint32(tag(15, LEN));
  const at = w.open();
  if (status.message) {
    w.uint32(tag(2, LEN));
    w.string(status.message);
  }
  w.uint32(tag(3, VARINT));
  w.uint32(status.code);
  w.close(at);
}

function writeEvent(w, event) {
  w.uint32(tag(11, LEN));
  const at = w.open();
  w.uint32(tag(1, I64));
  w.hrTime(event.time);
  w.uint32(tag(2, LEN));
  w.raw(prefixed(event.name));
  if (event.attributes) writeAttributes(w, event.attributes, 3);
  w.uint32(tag(4, VARINT));
  w.uint32(event.droppedAttributesCount || 0);
  w.close(at);
}

/** A span context's trace id, span id and trace state: fields 1-3 of a Span and of a Span.Link alike. */
function writeIds(w, ctx) {
  w.uint32(tag(1, LEN));
  w.hexBytes(ctx.traceId);
  w.uint32(tag(2, LEN));
  w.hexBytes(ctx.spanId);
  const traceState = ctx.traceState?.serialize();
  if (traceState) {
    w.uint32(tag(3, LEN));
    w.string(traceState);
  }
}

function writeLink(w, link) {
  w.uint32(tag(13, LEN));
  const at = w.open();
  const ctx = link.context;
  writeIds(w, ctx);
  if (link.attributes) writeAttributes(w, link.attributes, 4);
  w.uint32(tag(5, VARINT));
  w.uint32(link.droppedAttributesCount || 0);
  w.uint32(tag(6, I32));
  w.fixed32((ctx.traceFlags & 0xff) | SPAN_FLAGS_HAS_IS_REMOTE | (ctx.isRemote ? SPAN_FLAGS_IS_REMOTE : 0));
  w.close(at);
}

/** One ReadableSpan as ScopeSpans.spans (field 2). */
function writeSpan(w, span) {
  const ctx = span.spanContext();
  const parent = span.parentSpanContext;
  w.uint32(tag(2, LEN));
  const at = w.open();
  writeIds(w, ctx);
  if (parent?.spanId) {
    w.uint32(tag(4, LEN));
    w.hexBytes(parent.spanId);
  }
  w.uint32(tag(5, LEN));
  w.raw(prefixed(span.name));
  if (span.kind !== undefined && span.kind !== null) {
    w.uint32(tag(6, VARINT));
    w.uint32(span.kind + 1); // the API's kinds start at INTERNAL = 0; the proto keeps 0 for unspecified
  }
  w.uint32(tag(7, I64));
  w.hrTime(span.startTime);
  w.uint32(tag(8, I64));
  w.hrTime(span.endTime);
  writeAttributes(w, span.attributes, 9);
  const shared = span[SHARED];
  if (shared !== undefined) for (let i = 0; i < shared.length; i++) w.raw(encodedOf(shared[i]));
  if (span.droppedAttributesCount > 0) {
    w.uint32(tag(10, VARINT));
    w.uint32(span.droppedAttributesCount);
  }
  for (const event of span.events) writeEvent(w, event);
  if (span.droppedEventsCount > 0) {
    w.uint32(tag(12, VARINT));
    w.uint32(span.droppedEventsCount);
  }
  for (const link of span.links) writeLink(w, link);
  if (span.droppedLinksCount > 0) {
    w.uint32(tag(14, VARINT));
    w.uint32(span.droppedLinksCount);
  }
  writeStatus(w, span.status);
  w.uint32(tag(16, I32));
  w.fixed32((ctx.traceFlags & 0xff) | SPAN_FLAGS_HAS_IS_REMOTE | (parent?.isRemote ? SPAN_FLAGS_IS_REMOTE : 0));
  w.close(at);
}

/** ResourceSpans.resource (field 1) and ScopeSpans.scope (field 1), encoded once per resource and scope. */
const headOf = new WeakMap();
function encodedOnce(key, size, write) {
  let bytes = headOf.get(key);
  if (bytes === undefined) {
    const w = new Writer(size);
    w.uint32(tag(1, LEN));
    const at = w.open();
    write(w);
    w.close(at);
    bytes = Buffer.from(w.buf.subarray(0, w.pos));
    headOf.set(key, bytes);
  }
  return bytes;
}

const resourceBytes = (resource) => encodedOnce(resource, 1024, (w) => writeAttributes(w, resource.attributes, 1));

const scopeBytes = (scope) => encodedOnce(scope, 256, (w) => {
  w.uint32(tag(1, LEN));
  w.string(scope.name);
  if (scope.version) {
    w.uint32(tag(2, LEN));
    w.string(scope.version);
  }
});

/**
 * A serializer for the official export delegates ({serializeRequest, deserializeResponse}): ours
 * for a batch of one resource and one scope, the official one's otherwise and for the response.
 */
function protobufSerializer(official) {
  const w = new Writer();
  return {
    serializeRequest(spans) {
      if (spans.length === 0) return official.serializeRequest(spans);
      const { resource, instrumentationScope: scope } = spans[0];
      for (let i = 1; i < spans.length; i++) {
        if (spans[i].resource !== resource || spans[i].instrumentationScope !== scope) return official.serializeRequest(spans);
      }
      w.pos = 0;
      w.uint32(tag(1, LEN)); // ExportTraceServiceRequest.resource_spans
      const resourceSpans = w.open();
      w.raw(resourceBytes(resource));
      w.uint32(tag(2, LEN)); // ResourceSpans.scope_spans
      const scopeSpans = w.open();
      w.raw(scopeBytes(scope));
      for (let i = 0; i < spans.length; i++) writeSpan(w, spans[i]);
      if (scope.schemaUrl) {
        w.uint32(tag(3, LEN));
        w.string(scope.schemaUrl);
      }
      w.close(scopeSpans);
      if (resource.schemaUrl) {
        w.uint32(tag(3, LEN));
        w.string(resource.schemaUrl);
      }
      w.close(resourceSpans);
      return Buffer.from(w.buf.subarray(0, w.pos)); // a copy: the transport may still hold it (a retry) when the next batch is written
    },
    deserializeResponse: (bytes) => official.deserializeResponse(bytes),
  };
}

module.exports = { protobufSerializer, SharedAttributes, SHARED };
