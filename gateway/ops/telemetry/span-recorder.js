'use strict';

// The gateway's spans, made and recorded here rather than by the SDK's Tracer and Span: sampled at
// 100 %, a query is two spans, and the SDK's general ones (a context per span, attributes checked
// and limits counted on each set, a clock offset read per span, a link list, an id as text made
// from Math.random) were, with the garbage they leave, the largest part of what traces cost after
// the encoding. What the gateway needs is small: a root span (a query, a token request) or a child
// (a backend request), attributes, a status, an event, the end. The decision is the configured
// OpenTelemetry sampler's, asked as the SDK asks it; a child of a parentbased_* sampler follows its
// parent (the SDK's ParentBasedSampler does that for a local parent, and the gateway's are local).
// A recorded span is a ReadableSpan (@opentelemetry/sdk-trace), what the batch processor and both
// encodings (otlp-protobuf.js, and the official JSON one) read.

const crypto = require('node:crypto');
const { performance } = require('node:perf_hooks');
const {
  ROOT_CONTEXT, SamplingDecision, SpanStatusCode, TraceFlags,
} = require('@opentelemetry/api');

const NO_ATTRIBUTES = Object.freeze({});
const NO_LINKS = Object.freeze([]);
const NO_EVENTS = Object.freeze([]);
const UNSET = Object.freeze({ code: SpanStatusCode.UNSET });
const POOL = 24 * 512; // random bytes for 512 queries' ids, drawn at once
const ZERO_SPAN_ID = '0'.repeat(16);
const ZERO_TRACE_ID = '0'.repeat(32);
const CLOCK_MS = 1000; // how often the wall clock is read again to place the monotonic one (an NTP step moves it)

/**
 * Span ids from a pool of cryptographic random bytes (W3C Trace Context: random, never all zero),
 * as hex: the traceparent, the log's trace_id and the JSON encoding want them so.
 */
class Ids {
  constructor() {
    this.pool = Buffer.allocUnsafe(POOL);
    this.at = POOL;
  }

  next(bytes, zero) {
    if (this.at + bytes > POOL) {
      crypto.randomFillSync(this.pool);
      this.at = 0;
    }
    const id = this.pool.hexSlice(this.at, this.at + bytes);
    this.at += bytes;
    return id === zero ? this.next(bytes, zero) : id;
  }

  traceId() { return this.next(16, ZERO_TRACE_ID); }

  spanId() { return this.next(8, ZERO_SPAN_ID); }
}

/** What a span not recorded is: its ids and flags, for the traceparent; everything else does nothing. */
class UnrecordedSpan {
  constructor(spanContext) {
    this.context = spanContext;
  }

  spanContext() { return this.context; }

  isRecording() { return false; }

  setAttribute() { return this; }

  setAttributes() { return this; }

  setStatus() { return this; }

  addEvent() { return this; }

  end() {}
}

/** A recorded span: a ReadableSpan once ended, handed to the processor then. */
class RecordedSpan {
  /** ends: {processor, resource, scope}, what every span of its recorder shares. */
  constructor(ends, name, kind, spanContext, parentSpanContext, clock, startMs) {
    this.processor = ends.processor;
    this.name = name;
    this.kind = kind;
    this.context = spanContext;
    this.parentSpanContext = parentSpanContext;
    this.clock = clock; // the epoch ms of the monotonic clock's zero, as read when the trace began
    this.startTime = hrTimeOf(clock, startMs);
    this.endTime = undefined;
    this.ended = false;
    this.attributes = {};
    this.events = NO_EVENTS;
    this.status = UNSET;
    this.resource = ends.resource;
    this.instrumentationScope = ends.scope;
    this.links = NO_LINKS;
    this.droppedAttributesCount = 0;
    this.droppedEventsCount = 0;
    this.droppedLinksCount = 0;
  }

  spanContext() { return this.context; }

  /** ReadableSpan's duration, made only when read (no encoding reads it). */
  get duration() {
    if (!this.ended) return undefined;
    const ns = (this.endTime[0] - this.startTime[0]) * 1e9 + (this.endTime[1] - this.startTime[1]);
    return [Math.floor(ns / 1e9), ns % 1e9];
  }

  isRecording() { return !this.ended; }

  setAttribute(key, value) {
    if (!this.ended && value !== undefined && value !== null) this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes) {
    for (const key of Object.keys(attributes)) this.setAttribute(key, attributes[key]);
    return this;
  }

  /** As the SDK's: UNSET changes nothing, OK is final, a message is kept for an ERROR only. */
  setStatus(status) {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status = status.code === SpanStatusCode.ERROR && typeof status.message === 'string'
      ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  addEvent(name, attributes) {
    if (this.ended) return this;
    if (this.events === NO_EVENTS) this.events = [];
    this.events.push({
      name, attributes: attributes || NO_ATTRIBUTES, time: hrTimeOf(this.clock, performance.now()), droppedAttributesCount: 0,
    });
    return this;
  }

  end() {
    if (this.ended) return;
    this.endTime = hrTimeOf(this.clock, performance.now());
    if (compare(this.endTime, this.startTime) < 0) this.endTime = this.startTime;
    this.ended = true;
    this.processor.onEnd(this);
  }
}

const compare = (a, b) => (a[0] - b[0]) || (a[1] - b[1]);

/** [seconds, nanoseconds] since the epoch of a monotonic time (performance.now() ms), placed by clock. */
function hrTimeOf(clock, ms) {
  const t = clock.ms + ms; // clock.ms is below 1000: t keeps the monotonic clock's precision
  const seconds = Math.floor(t / 1000);
  let nanos = Math.round((t - seconds * 1000) * 1e6);
  let carry = 0;
  if (nanos >= 1e9) {
    nanos -= 1e9;
    carry = 1;
  }
  return [clock.seconds + seconds + carry, nanos];
}

class SpanRecorder {
  /** sampler: an OpenTelemetry Sampler for root spans; parentBased: a child follows its parent's decision. */
  constructor({
    sampler, parentBased, resource, scope, processor,
  }) {
    this.sampler = sampler;
    this.parentBased = parentBased;
    this.resource = resource;
    this.scope = scope;
    this.processor = processor;
    this.ends = Object.freeze({ processor, resource, scope }); // what each span it makes shares
    this.ids = new Ids();
    this.clock = null;
    this.clockAt = -Infinity;
  }

  /** The wall clock's reading of the monotonic clock's zero, read again every CLOCK_MS: spans of one trace share one. */
  clockNow(now) {
    if (now - this.clockAt >= CLOCK_MS) {
      const origin = Date.now() - performance.now();
      const seconds = Math.floor(origin / 1000);
      this.clock = Object.freeze({ seconds, ms: origin - seconds * 1000 });
      this.clockAt = now;
    }
    return this.clock;
  }

  /**
   * A span: of a new trace without parent, else the parent's child. startMs: when it began
   * (performance.now() ms), now if not given.
   */
  startSpan(name, kind, parent, startMs) {
    const spanId = this.ids.spanId();
    if (parent === undefined) return this.root(name, kind, spanId, startMs);
    const parentContext = parent.spanContext();
    const { traceId } = parentContext;
    const decision = this.parentBased
      ? ((parentContext.traceFlags & TraceFlags.SAMPLED) !== 0 ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD)
      : this.sampler.shouldSample(ROOT_CONTEXT, traceId, name, kind, NO_ATTRIBUTES, NO_LINKS).decision;
    const clock = parent instanceof RecordedSpan ? parent.clock : this.clockNow(performance.now());
    return this.make(name, kind, decision, traceId, spanId, parentContext, clock, startMs);
  }

  root(name, kind, spanId, startMs) {
    const traceId = this.ids.traceId();
    const { decision } = this.sampler.shouldSample(ROOT_CONTEXT, traceId, name, kind, NO_ATTRIBUTES, NO_LINKS);
    const now = performance.now();
    return this.make(name, kind, decision, traceId, spanId, undefined, this.clockNow(now), startMs === undefined ? now : startMs);
  }

  make(name, kind, decision, traceId, spanId, parentSpanContext, clock, startMs) {
    const traceFlags = decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE;
    const spanContext = { traceId, spanId, traceFlags, isRemote: false };
    if (decision === SamplingDecision.NOT_RECORD) return new UnrecordedSpan(spanContext);
    return new RecordedSpan(this.ends, name, kind, spanContext, parentSpanContext, clock, startMs === undefined ? performance.now() : startMs);
  }
}

module.exports = { SpanRecorder };
