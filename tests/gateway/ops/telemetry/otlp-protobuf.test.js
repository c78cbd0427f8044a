'use strict';

// The gateway's own OTLP/protobuf encoding of spans (gateway/ops/telemetry/otlp-protobuf.js)
// against the official one (@opentelemetry/otlp-transformer), both decoded with the official
// .proto files: for spans made by the real SDK, with every kind of attribute value, events, links,
// statuses and lengths that need one to three bytes of length prefix, the two decode to the same
// request; attributes a span shares (listed on it, encoded once) decode as if set on the span.

const assert = require('node:assert/strict');
const path = require('node:path');
const protobuf = require('protobufjs');
const { SpanKind, SpanStatusCode, trace, ROOT_CONTEXT } = require('@opentelemetry/api');
const { TracerProvider } = require('@opentelemetry/sdk-trace');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { ProtobufTraceSerializer } = require('@opentelemetry/otlp-transformer');
const { protobufSerializer, SharedAttributes, SHARED } = require('../../../../gateway/ops/telemetry/otlp-protobuf');
const { PROTO_ROOT } = require('../../../helpers/otlp-receiver');

function requestType() {
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => path.join(PROTO_ROOT, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

const decode = (type, bytes) => type.toObject(type.decode(bytes), {
  longs: String, bytes: String, defaults: true, arrays: true, enums: Number,
});

/** Ended spans, collected as the batch processor would hand them to an exporter. */
function spansFrom(make) {
  const ended = [];
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'gw-encoding', 'service.instance.id': 'é-1', 'host.cpus': 2 }),
    spanProcessors: [{ onStart() {}, onEnd: (span) => ended.push(span), forceFlush: async () => {}, shutdown: async () => {} }],
  });
  make(provider.getTracer('ged145', '9.9.9'));
  return ended;
}

const SHARED_ONE = { 'rpc.system': 'ged145', 'client.address': '2001:db8::1', 'client.port': 40000, 'ged145.session.id': 7 };
const SHARED_TWO = { 'rpc.method': 'cust.lookup', 'ged145.query.subtype': 'cust.lookup' };

/** The spans of a query, the root's shared attributes listed on it (SHARED), as spans.js does for this encoding. */
function spansWith(filler) {
  return spansFrom((tracer) => {
    const root = tracer.startSpan('ged145 query cust.lookup', { kind: SpanKind.SERVER, startTime: [1_764_300_000, 123_456_789] });
    root.setAttribute('ged145.query.invoke_id', 4_294_967_295);
    root[SHARED] = [new SharedAttributes(SHARED_ONE), new SharedAttributes(SHARED_TWO)];
    const child = tracer.startSpan('GET /customers/{clid}', { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, root));
    child.setAttributes({
      'url.full': 'https://crm.example/customers/REDACTED?acct=REDACTED',
      'http.response.status_code': 503,
      'ged145.negative': -5,
      'ged145.big': 2 ** 40,
      'ged145.ratio': 0.25,
      'ged145.flag': false,
      'ged145.list': ['a', 'ü', 'c'],
      'ged145.numbers': [1, 2.5, -3],
      'ged145.filler': filler,
    });
    child.addEvent('ged145.backend.reconnect');
    child.addEvent('with attributes', { why: 'reset', n: 3 });
    child.addLink({ context: root.spanContext(), attributes: { linked: true } });
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'unreachable' });
    child.end();
    root.setStatus({ code: SpanStatusCode.OK });
    root.end([1_764_300_000, 999_999_999]);
    const plain = tracer.startSpan('internal', {}, ROOT_CONTEXT);
    plain.end();
  });
}

/** The span as the official encoding needs it: the shared attributes set on it, after its own. */
const withShared = (span) => Object.create(span, {
  attributes: { value: Object.assign({}, span.attributes, ...(span[SHARED] || []).map((shared) => shared.attributes)) },
});

describe('traces: the OTLP/protobuf encoding of spans', () => {
  const type = requestType();

  for (const size of [0, 100, 200, 20_000, 3_000_000]) {
    it(`decodes to what the official encoding does (an attribute of ${size} bytes)`, () => {
      const spans = spansWith('x'.repeat(size));
      const expected = decode(type, ProtobufTraceSerializer.serializeRequest(spans.map(withShared)));
      const serializer = protobufSerializer(ProtobufTraceSerializer);
      const actual = decode(type, serializer.serializeRequest(spans));
      assert.deepEqual(actual, expected);
      assert.equal(actual.resourceSpans[0].scopeSpans[0].spans.length, 3);
      // The shared attributes arrive as the span's own would, after them.
      const rootAttributes = actual.resourceSpans[0].scopeSpans[0].spans[1].attributes.map((kv) => kv.key);
      assert.deepEqual(rootAttributes, ['ged145.query.invoke_id', ...Object.keys(SHARED_ONE), ...Object.keys(SHARED_TWO)]);
    });
  }

  it('writes each batch afresh: a batch after a larger one, and the bytes of an earlier one kept', () => {
    const serializer = protobufSerializer(ProtobufTraceSerializer);
    const big = spansWith('y'.repeat(100_000));
    const small = spansWith('z');
    const first = serializer.serializeRequest(small);
    const copy = Buffer.from(first);
    serializer.serializeRequest(big);
    const again = serializer.serializeRequest(small);
    assert.deepEqual(Buffer.from(first), copy); // the transport may still hold the first (a retry)
    assert.deepEqual(Buffer.from(again), copy);
  });

  it('leaves a batch of two resources to the official encoding', () => {
    const one = spansWith('a');
    const two = spansFrom((tracer) => tracer.startSpan('other').end());
    two[0].resource = resourceFromAttributes({ 'service.name': 'another' });
    const serializer = protobufSerializer(ProtobufTraceSerializer);
    const decoded = decode(type, serializer.serializeRequest([...one, ...two]));
    assert.equal(decoded.resourceSpans.length, 2);
  });
});
