'use strict';

// The OpenTelemetry SDK as the gateway uses it: a tracer provider of its own (never registered as
// the process's global one, so a user's own instrumentation loaded with -r keeps its own), the
// sampler, the resource and the OTLP exporter the settings name (HTTP protobuf or JSON, or gRPC),
// and the counted batch processor. Required only when traces are on: a gateway without them never
// loads the SDK, and only the exporter in use is loaded (gRPC's brings @grpc/grpc-js along).

const crypto = require('node:crypto');
const { TracerProvider, AlwaysOnSampler, AlwaysOffSampler, TraceIdRatioBasedSampler, ParentBasedSampler } = require('@opentelemetry/sdk-trace');
const { defaultResource, resourceFromAttributes } = require('@opentelemetry/resources');
const { CountedBatchProcessor } = require('./processor');
const { version } = require('../../../package.json');

function samplerOf(name, ratio) {
  const root = {
    always_on: () => new AlwaysOnSampler(),
    always_off: () => new AlwaysOffSampler(),
    traceidratio: () => new TraceIdRatioBasedSampler(ratio),
  }[name.replace(/^parentbased_/, '')]();
  // A query span is always a root (the router sends no trace context), so parentbased_x samples as x does.
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

/** Each process its own: the workers of one gateway share its service.name, and are told apart by this (semconv: a UUID v4). */
const INSTANCE_ID = crypto.randomUUID();

function exporterOf(traces) {
  if (traces.protocol === 'grpc') return grpcExporterOf(traces);
  const options = { url: traces.endpoint, headers: traces.headers, timeoutMillis: traces.timeoutMs };
  const { OTLPTraceExporter } = traces.protocol === 'http/json'
    ? require('@opentelemetry/exporter-trace-otlp-http') : require('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(options);
}

/** OTLP/gRPC: the headers go as gRPC metadata; http:// is a plaintext channel, https:// TLS (the exporter's rule). */
function grpcExporterOf(traces) {
  const exporterPath = require.resolve('@opentelemetry/exporter-trace-otlp-grpc');
  const { OTLPTraceExporter } = require(exporterPath);
  // The metadata class of the very grpc-js the exporter uses, found from the exporter itself.
  const { createEmptyMetadata } = require(require.resolve('@opentelemetry/otlp-grpc-exporter-base', { paths: [exporterPath] }));
  const metadata = createEmptyMetadata();
  for (const [key, value] of Object.entries(traces.headers)) metadata.set(key.toLowerCase(), value);
  return new OTLPTraceExporter({ url: traces.endpoint, metadata, timeoutMillis: traces.timeoutMs });
}

/** {tracer, provider, processor}; onDrop(count, reason, error) hears every span lost. */
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
  const provider = new TracerProvider({
    resource, sampler: samplerOf(traces.sampler, traces.samplerArg), spanProcessors: [processor],
  });
  return { tracer: provider.getTracer('ged145', version), provider, processor };
}

module.exports = { createTracer };
