'use strict';

// OpenTelemetry traces for one gateway (docs/tracing.md), started beside it by whoever starts it.
// Off unless the configuration or the standard OTEL_* environment asks for them: then nothing
// subscribes to the core's channels and the SDK is not even loaded (settings.js decides, alone).
// On: spans.js subscribes, tracer.js builds the SDK, and every span lost to a full queue or a
// failed export is counted in ged145_trace_spans_dropped_total and said in at most one log line a
// minute: a collector that is down costs spans, never a query, and never a flood of lines.

const { resolveTraces } = require('./settings');

const DROP_LOG_MS = 60_000;
const STOP_MS = 2000; // on stop, the last spans get this long to leave: a collector that is down never holds a shutdown up
const DROPPED = 'ged145_trace_spans_dropped_total';
const present = (v) => v !== undefined && v !== null;

class Tracing {
  constructor(gateway, traces, { log, registry }) {
    const { createTracer } = require('./tracer');
    const { QuerySpans } = require('./spans');
    this.log = log;
    this.settings = traces;
    this.dropped = droppedCounter(registry);
    this.unlogged = 0;
    this.loggedAt = null;
    const { tracer, provider, processor } = createTracer(traces, { onDrop: (count, reason, error) => this.onDrop(count, reason, error) });
    this.provider = provider;
    this.processor = processor;
    this.spans = new QuerySpans(gateway, tracer, { callerData: traces.callerData }).subscribe();
  }

  onDrop(count, reason, error) {
    this.dropped.inc({ reason }, count);
    this.unlogged += count;
    const now = Date.now();
    if (this.loggedAt !== null && now - this.loggedAt < DROP_LOG_MS) return;
    const since = this.loggedAt === null ? '' : ' in the last minute';
    const why = reason === 'queue_full' ? 'the export queue is full'
      : reason === 'shutdown' ? 'the gateway stopped before the collector took them'
        : `the collector at ${shown(this.settings.endpoint)} did not take them: ${describe(error)}`;
    this.log.warn(`traces: ${this.unlogged} span(s) dropped${since}, ${why}; queries are not affected `
      + `(${DROPPED} counts every one; the next such line in a minute at the earliest)`);
    this.loggedAt = now;
    this.unlogged = 0;
  }

  /** Unsubscribes, then gives the spans still queued a last export, bounded (STOP_MS). */
  async stop() {
    this.spans.unsubscribe();
    let timer;
    await Promise.race([
      this.provider.shutdown().catch(() => {}),
      new Promise((resolve) => { timer = setTimeout(resolve, STOP_MS); }),
    ]);
    clearTimeout(timer);
    this.processor.abandon();
  }
}

function droppedCounter(registry) {
  const client = require('prom-client');
  return registry.getSingleMetric(DROPPED) || new client.Counter({
    name: DROPPED,
    help: 'Spans lost before reaching the collector, by reason: queue_full (telemetry.traces.maxQueueSize), export_failed, shutdown (still queued at the stop)',
    labelNames: ['reason'],
    registers: [registry],
  });
}

/** A URL as logged: without a user or password it may carry. */
function shown(endpoint) {
  const url = new URL(endpoint);
  url.username = '';
  url.password = '';
  return url.href;
}

/** One line, no stack: an exporter error's code or first line. */
function describe(error) {
  if (!present(error)) return 'no answer';
  const text = error.code || String(error.message || error).split('\n')[0];
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/**
 * Traces for gateway, when its configuration or the environment turns them on: a Tracing (stop()
 * it after the gateway), or null. Problems in the environment are warned about, once each.
 * registry: the gateway's Prometheus registry (ops/attach.js), where dropped spans are counted.
 */
function startTracing(gateway, config, { log, env = process.env, registry = gateway.metrics.registry }) {
  const { traces, problems } = resolveTraces(config.telemetry.traces, env);
  for (const problem of problems) log.warn(`traces: ${problem}; ignored`);
  if (!traces.on) return null;
  const tracing = new Tracing(gateway, traces, { log, registry });
  log.info(`traces: to ${shown(traces.endpoint)} (${traces.protocol}) as service.name ${traces.serviceName}, sampler ${traces.sampler}`
    + `${traces.sampler.endsWith('traceidratio') ? ` ${traces.samplerArg}` : ''}${traces.callerData ? ', with caller data' : ''}`);
  return tracing;
}

module.exports = { startTracing, Tracing };
