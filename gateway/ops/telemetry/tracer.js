'use strict';

// The OpenTelemetry SDK as the gateway uses it: a tracer provider of its own (never registered as
// the process's global one, so a user's own instrumentation loaded with -r keeps its own), the
// sampler, the resource and the OTLP/HTTP exporter the settings name, and the counted batch
// processor. Required only when traces are on: a gateway without them never loads the SDK.

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

function exporterOf(traces) {
  const options = { url: traces.endpoint, headers: traces.headers, timeoutMillis: traces.timeoutMs };
  const { OTLPTraceExporter } = traces.protocol === 'http/json'
    ? require('@opentelemetry/exporter-trace-otlp-http') : require('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(options);
}

/** {tracer, provider, processor}; onDrop(count, reason, error) hears every span lost. */
function createTracer(traces, { onDrop }) {
  const resource = defaultResource().merge(resourceFromAttributes({
    'service.version': version,
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

module.exports = { createTracer, samplerOf };
