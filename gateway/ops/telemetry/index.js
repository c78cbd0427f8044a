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

/**
 * Made before its gateway and attached to it right after the gateway's constructor: a gateway's
 * first token request leaves from its constructor, and is traced too (spans.js, owns()).
 */
class Tracing {
  constructor(traces, { log }) {
    const { createTracer } = require('./tracer');
    const { QuerySpans } = require('./spans');
    this.log = log;
    this.settings = traces;
    this.dropped = null; // the counter, on the gateway's registry once attached
    this.uncounted = new Map(); // reason -> spans dropped before that
    this.unlogged = 0;
    this.loggedAt = null;
    const { tracer, provider, processor } = createTracer(traces, { onDrop: (count, reason, error) => this.onDrop(count, reason, error) });
    this.provider = provider;
    this.processor = processor;
    this.spans = new QuerySpans(tracer, { callerData: traces.callerData }).subscribe();
  }

  /** From now on, only gateway's queries and requests are traced; the drops are counted on registry (the gateway's metrics). */
  attach(gateway, { registry }) {
    this.spans.attach(gateway);
    this.dropped = droppedCounter(registry);
    for (const [reason, count] of this.uncounted) this.dropped.inc({ reason }, count);
    this.uncounted.clear();
    return this;
  }

  onDrop(count, reason, error) {
    if (this.dropped === null) this.uncounted.set(reason, (this.uncounted.get(reason) || 0) + count);
    else this.dropped.inc({ reason }, count);
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

/** One line, no stack: an exporter error's code (ECONNREFUSED), or its first line (gRPC's numeric code is in it: "14 UNAVAILABLE: ..."). */
function describe(error) {
  if (!present(error)) return 'no answer';
  const text = typeof error.code === 'string' ? error.code : String(error.message || error).split('\n')[0];
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/**
 * Traces, when the configuration or the environment turns them on: a Tracing (attach() it to the
 * gateway made next, stop() it after the gateway), or null. Problems in the environment are
 * warned about, once each.
 */
function startTracing(config, { log, env = process.env }) {
  const { traces, problems } = resolveTraces(config.telemetry.traces, env);
  for (const problem of problems) log.warn(`traces: ${problem}; ignored`);
  if (!traces.on) return null;
  const tracing = new Tracing(traces, { log });
  log.info(`traces: to ${shown(traces.endpoint)} (${traces.protocol}) as service.name ${traces.serviceName}, sampler ${traces.sampler}`
    + `${traces.sampler.endsWith('traceidratio') ? ` ${traces.samplerArg}` : ''}${traces.callerData ? ', with caller data' : ''}`);
  return tracing;
}

module.exports = { startTracing };
