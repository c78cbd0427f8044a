'use strict';

// An OTLP/HTTP trace receiver on 127.0.0.1, written from the OTLP specification
// (opentelemetry-proto, docs/specification.md, "OTLP/HTTP"): POST /v1/traces with
// `application/x-protobuf` (an ExportTraceServiceRequest, decoded here with the official .proto
// files vendored in tests/fixtures/otlp/) or `application/json` (the same message in the
// protobuf JSON mapping, except that trace and span ids are hex strings, as the spec says), with
// or without `Content-Encoding: gzip`. It answers 200 with an empty ExportTraceServiceResponse
// in the request's own encoding, 400 to a body it cannot decode, 415 to any other type.
// Whatever it decodes is kept as flat spans, the same whichever encoding carried them.
//
// startOtlpGrpcReceiver: the same over OTLP/gRPC (docs/specification.md, "OTLP/gRPC"), a real gRPC
// server (@grpc/grpc-js, which the gRPC exporter depends on) serving the unary
// opentelemetry.proto.collector.trace.v1.TraceService/Export, its messages decoded with the same
// .proto files; a request's metadata is kept as its headers.

const http = require('node:http');
const path = require('node:path');
const zlib = require('node:zlib');
const { once } = require('node:events');
const protobuf = require('protobufjs');

const PROTO_ROOT = path.join(__dirname, '..', 'fixtures', 'otlp');
const SERVICE_PROTO = 'opentelemetry/proto/collector/trace/v1/trace_service.proto';

let types = null;
function protoTypes() {
  if (types === null) {
    const root = new protobuf.Root();
    root.resolvePath = (origin, target) => path.join(PROTO_ROOT, target);
    root.loadSync(SERVICE_PROTO, { keepCase: false });
    types = {
      request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
      response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    };
  }
  return types;
}

/** An AnyValue (common.proto) as a plain value; int64s as numbers (the tests' values are small). */
function valueOf(any) {
  if (any === undefined || any === null) return null;
  if ('stringValue' in any) return any.stringValue;
  if ('boolValue' in any) return any.boolValue;
  if ('intValue' in any) return Number(any.intValue);
  if ('doubleValue' in any) return Number(any.doubleValue);
  if ('arrayValue' in any) return (any.arrayValue.values || []).map(valueOf);
  if ('kvlistValue' in any) return attributesOf(any.kvlistValue.values);
  if ('bytesValue' in any) return any.bytesValue;
  return null;
}

function attributesOf(list) {
  return Object.fromEntries((list || []).map((kv) => [kv.key, valueOf(kv.value)]));
}

const hexOf = (id, encoding) => {
  if (id === undefined || id === null || id === '') return '';
  return encoding === 'json' ? String(id).toLowerCase() : Buffer.from(id).toString('hex');
};

/** An ExportTraceServiceRequest (as protobufjs's toObject or the JSON mapping gives it) -> flat spans. */
function spansOf(request, encoding) {
  const out = [];
  for (const rs of request.resourceSpans || []) {
    const resource = attributesOf(rs.resource && rs.resource.attributes);
    for (const ss of rs.scopeSpans || []) {
      for (const s of ss.spans || []) {
        out.push({
          traceId: hexOf(s.traceId, encoding),
          spanId: hexOf(s.spanId, encoding),
          parentSpanId: hexOf(s.parentSpanId, encoding),
          name: s.name,
          kind: Number(s.kind || 0),
          startNs: BigInt(s.startTimeUnixNano || 0),
          endNs: BigInt(s.endTimeUnixNano || 0),
          attributes: attributesOf(s.attributes),
          status: { code: Number((s.status && s.status.code) || 0), message: (s.status && s.status.message) || '' },
          scope: ss.scope ? ss.scope.name : '',
          resource,
          encoding,
        });
      }
    }
  }
  return out;
}

function decode(body, contentType) {
  if (contentType === 'application/x-protobuf') {
    const { request } = protoTypes();
    const message = request.decode(body);
    return spansOf(request.toObject(message, { longs: String, bytes: Buffer, defaults: false }), 'protobuf');
  }
  return spansOf(JSON.parse(body.toString('utf8')), 'json');
}

/** What a receiver keeps, whichever transport: spans, requests, errors, take(request), waitForSpans(pred, ms). */
function collector() {
  const spans = [];
  const requests = [];
  const errors = [];
  const waiters = new Set();
  return {
    spans,
    requests,
    errors,
    take(request) {
      requests.push(request);
      spans.push(...request.spans);
      for (const w of waiters) w();
    },
    /** Resolves with the spans once pred(spans) is true (or rejects after ms, saying what it holds). */
    waitForSpans(pred, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pred(spans)) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(spans);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${ms} ms; the receiver holds ${spans.length} spans: ${spans.map((s) => s.name).join(', ')}`));
        }, ms);
        if (!check()) waiters.add(check);
      });
    },
  };
}

/**
 * Starts a receiver: {url (its /v1/traces), base, spans, requests, errors, waitForSpans(pred, ms), close()}.
 * requests: {contentType, encoding, headers, spans} of each export, in order.
 */
async function startOtlpReceiver() {
  const kept = collector();
  const { errors } = kept;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const contentType = String(req.headers['content-type'] || '').split(';')[0].trim();
      const reply = (status, type, body) => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      };
      if (req.method !== 'POST' || req.url.split('?')[0] !== '/v1/traces') return reply(404, 'text/plain', 'not found');
      if (contentType !== 'application/x-protobuf' && contentType !== 'application/json') {
        errors.push(`content-type ${contentType}`);
        return reply(415, 'text/plain', 'unsupported content type');
      }
      let got;
      try {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
        got = decode(body, contentType);
      } catch (err) {
        errors.push(`${contentType}: ${err.message}`);
        return reply(400, 'text/plain', 'bad request');
      }
      kept.take({
        contentType, encoding: got.length > 0 ? got[0].encoding : null, headers: req.headers, spans: got,
      });
      if (contentType === 'application/json') return reply(200, 'application/json', '{}');
      const { response } = protoTypes();
      return reply(200, 'application/x-protobuf', Buffer.from(response.encode(response.create({})).finish()));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    ...kept,
    base,
    url: `${base}/v1/traces`,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

/**
 * Starts an OTLP/gRPC receiver on 127.0.0.1 (plaintext): {url (http://127.0.0.1:port, as the
 * exporter takes it), spans, requests ({contentType 'application/grpc', encoding 'protobuf',
 * headers: the call's metadata, spans}), errors, waitForSpans(pred, ms), close()}.
 */
async function startOtlpGrpcReceiver() {
  const grpc = require('@grpc/grpc-js');
  const { request, response } = protoTypes();
  const kept = collector();
  const server = new grpc.Server();
  const raw = (b) => b;
  server.addService({
    Export: {
      path: EXPORT_PATH,
      requestStream: false,
      responseStream: false,
      requestSerialize: raw,
      requestDeserialize: raw,
      responseSerialize: () => Buffer.from(response.encode(response.create({})).finish()),
      responseDeserialize: raw,
    },
  }, {
    Export(call, callback) {
      let got;
      try {
        got = spansOf(request.toObject(request.decode(call.request), { longs: String, bytes: Buffer, defaults: false }), 'protobuf');
      } catch (err) {
        kept.errors.push(`grpc: ${err.message}`);
        return callback({ code: grpc.status.INVALID_ARGUMENT, details: 'cannot decode' });
      }
      const headers = Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)]));
      kept.take({
        contentType: 'application/grpc', encoding: 'protobuf', headers, spans: got,
      });
      return callback(null, {});
    },
  });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return {
    ...kept,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => { server.tryShutdown(() => r()); setTimeout(() => { server.forceShutdown(); r(); }, 1000).unref(); }),
  };
}

module.exports = { startOtlpReceiver, startOtlpGrpcReceiver, PROTO_ROOT };
