'use strict';

// The OpenTelemetry SDK as the gateway uses it: the sampler, the resource and the OTLP exporter the
// settings name (HTTP protobuf or JSON, or gRPC), with the gateway's own span recorder
// (span-recorder.js) and the counted batch processor; no tracer provider, nothing registered as
// the process's global one, so a user's own instrumentation loaded with -r keeps its own. Required only when traces are on: a gateway without them never
// loads the SDK, and only the exporter in use is loaded (gRPC's brings @grpc/grpc-js along).
// Protobuf (over HTTP or gRPC) is encoded by otlp-protobuf.js and sent by the official exporter's
// own transport, built as the official OTLPTraceExporter builds it (its delegate factory), so that
// retries, timeouts, headers, compression and the OTEL_EXPORTER_OTLP_* settings stay the official ones.

const crypto = require('node:crypto');
const { AlwaysOnSampler, AlwaysOffSampler, TraceIdRatioBasedSampler } = require('@opentelemetry/sdk-trace');
const { defaultResource, resourceFromAttributes } = require('@opentelemetry/resources');
const { CountedBatchProcessor } = require('./processor');
const { protobufSerializer } = require('./otlp-protobuf');
const { SpanRecorder } = require('./span-recorder');
const { version } = require('../../../package.json');

/**
 * {sampler, parentBased}: the sampler of root spans, and whether a child follows its parent. A
 * query span is always a root (the router sends no trace context), so parentbased_x samples a
 * query as x does, and its backend requests as the query.
 */
function samplerOf(name, ratio) {
  const sampler = {
    always_on: () => new AlwaysOnSampler(),
    always_off: () => new AlwaysOffSampler(),
    traceidratio: () => new TraceIdRatioBasedSampler(ratio),
  }[name.replace(/^parentbased_/, '')]();
  return { sampler, parentBased: name.startsWith('parentbased_') };
}

/** Each process its own: the workers of one gateway share its service.name, and are told apart by this (semconv: a UUID v4). */
const INSTANCE_ID = crypto.randomUUID();

/** A package the official exporter depends on, as the exporter finds it (the same version it was released with). */
const besideExporter = (exporterPath, name) => require(require.resolve(name, { paths: [exporterPath] }));

function exporterOf(traces) {
  if (traces.protocol === 'grpc') return grpcExporterOf(traces);
  const options = { url: traces.endpoint, headers: traces.headers, timeoutMillis: traces.timeoutMs };
  if (traces.protocol === 'http/json') {
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(options);
  }
  // What OTLPTraceExporter of exporter-trace-otlp-proto does, with the serializer ours.
  const exporterPath = require.resolve('@opentelemetry/exporter-trace-otlp-proto');
  const { OTLPExporterBase } = besideExporter(exporterPath, '@opentelemetry/otlp-exporter-base');
  const { createOtlpHttpExportDelegate, convertLegacyHttpOptions } = besideExporter(exporterPath, '@opentelemetry/otlp-exporter-base/node-http');
  const { ProtobufTraceSerializer, TraceExporterMetricsHelper } = besideExporter(exporterPath, '@opentelemetry/otlp-transformer');
  return new OTLPExporterBase(createOtlpHttpExportDelegate(
    convertLegacyHttpOptions(options, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }),
    protobufSerializer(ProtobufTraceSerializer),
    'otlp_http_span_exporter',
    TraceExporterMetricsHelper,
  ));
}

/** OTLP/gRPC: the headers go as gRPC metadata; http:// is a plaintext channel, https:// TLS (the exporter's rule). */
function grpcExporterOf(traces) {
  const exporterPath = require.resolve('@opentelemetry/exporter-trace-otlp-grpc');
  // The metadata class of the very grpc-js the exporter uses, found from the exporter itself.
  const {
    createEmptyMetadata, createOtlpGrpcExportDelegate, convertLegacyOtlpGrpcOptions,
  } = besideExporter(exporterPath, '@opentelemetry/otlp-grpc-exporter-base');
  const { OTLPExporterBase } = besideExporter(exporterPath, '@opentelemetry/otlp-exporter-base');
  const { ProtobufTraceSerializer, TraceExporterMetricsHelper } = besideExporter(exporterPath, '@opentelemetry/otlp-transformer');
  const metadata = createEmptyMetadata();
  for (const [key, value] of Object.entries(traces.headers)) metadata.set(key.toLowerCase(), value);
  // What OTLPTraceExporter of exporter-trace-otlp-grpc does, with the serializer ours.
  return new OTLPExporterBase(createOtlpGrpcExportDelegate(
    convertLegacyOtlpGrpcOptions({ url: traces.endpoint, metadata, timeoutMillis: traces.timeoutMs }, 'TRACES'),
    protobufSerializer(ProtobufTraceSerializer),
    'otlp_grpc_span_exporter',
    TraceExporterMetricsHelper,
    undefined,
    'TraceExportService',
    '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
  ));
}

/** {tracer (a SpanRecorder), processor, sharedAttributes}; onDrop(count, reason, error) hears every span lost. */
function createTracer(traces, { onDrop }) {
  const resource = defaultResource().merge(resourceFromAttributes({
    'service.version': version,
    'service.instance.id': INSTANCE_ID,
    ...traces.resourceAttributes,
    'service.name': traces.serviceName,
  }));
  const processor = new CountedBatchProcessor(exporterOf(traces), {
    maxQueueSize: traces.maxQueueSize, maxExportBatchSize: traces.maxExportBatchSize, scheduledDelayMs: traces.scheduledDelayMs, onDrop,
  });
  const tracer = new SpanRecorder({
    ...samplerOf(traces.sampler, traces.samplerArg), resource, scope: Object.freeze({ name: 'ged145', version }), processor,
  });
  // Protobuf is encoded by otlp-protobuf.js, which reads the attributes a span shares from the span's list of them.
  return { tracer, processor, sharedAttributes: traces.protocol !== 'http/json' };
}

module.exports = { createTracer, samplerOf };
