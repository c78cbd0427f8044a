'use strict';

// The gateway's own spans (gateway/ops/telemetry/span-recorder.js), with the SDK's real samplers:
// ids as W3C Trace Context wants them, times on the wall clock with the monotonic clock's
// precision (a child inside its parent), the sampler's decision for a root and a child as the
// SDK's Tracer would take it, and a span's status and end as the SDK's Span keeps them.

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { SpanKind, SpanStatusCode, TraceFlags } = require('@opentelemetry/api');
const { SpanRecorder } = require('../../../../gateway/ops/telemetry/span-recorder');
const { samplerOf } = require('../../../../gateway/ops/telemetry/tracer');

function recorder(sampler = 'always_on', ratio = 1) {
  const ended = [];
  const rec = new SpanRecorder({
    ...samplerOf(sampler, ratio), resource: { attributes: {} }, scope: { name: 'ged145' }, processor: { onEnd: (span) => ended.push(span) },
  });
  return { rec, ended };
}

const ms = (hr) => hr[0] * 1000 + hr[1] / 1e6;
const sampled = (span) => (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;

describe('traces: the gateway\'s spans', () => {
  it('have random ids in lowercase hex, never repeated, never all zero', () => {
    const { rec } = recorder();
    const traceIds = new Set();
    const spanIds = new Set();
    for (let i = 0; i < 5000; i++) {
      const { traceId, spanId } = rec.startSpan('q', SpanKind.SERVER).spanContext();
      assert.match(traceId, /^[0-9a-f]{32}$/);
      assert.match(spanId, /^[0-9a-f]{16}$/);
      assert.ok(!/^0+$/.test(traceId) && !/^0+$/.test(spanId));
      traceIds.add(traceId);
      spanIds.add(spanId);
    }
    assert.equal(traceIds.size, 5000);
    assert.equal(spanIds.size, 5000);
  });

  it('are placed on the wall clock, a query span from when its query was read, a child inside its parent', async () => {
    const { rec, ended } = recorder();
    const before = Date.now();
    const root = rec.startSpan('q', SpanKind.SERVER, undefined, performance.now() - 20);
    const child = rec.startSpan('GET /x', SpanKind.CLIENT, root);
    await new Promise((resolve) => { setTimeout(resolve, 15); });
    child.end();
    root.end();
    const after = Date.now();
    assert.deepEqual(ended, [child, root]);
    // Bounds for a busy machine: the clocks agree to a millisecond, the test may wait far longer between its reads.
    assert.ok(ms(root.startTime) >= before - 20 - 50 && ms(root.startTime) <= after, `${ms(root.startTime)} vs ${before - 20}`);
    assert.ok(ms(root.endTime) >= before - 1 && ms(root.endTime) <= after + 50);
    assert.ok(ms(root.endTime) - ms(root.startTime) >= 35 - 1);
    assert.ok(ms(child.startTime) >= ms(root.startTime) && ms(child.endTime) <= ms(root.endTime));
    assert.ok(ms(child.endTime) - ms(child.startTime) >= 14);
    for (const span of [root, child]) assert.ok(span.startTime[1] >= 0 && span.startTime[1] < 1e9 && span.endTime[1] < 1e9);
    assert.equal(child.parentSpanContext.spanId, root.spanContext().spanId);
    assert.equal(child.spanContext().traceId, root.spanContext().traceId);
    assert.equal(root.parentSpanContext, undefined);
  });

  it('always_off: no span recorded, none ended to the processor, the ids still there for a traceparent', () => {
    const { rec, ended } = recorder('always_off');
    const root = rec.startSpan('q', SpanKind.SERVER);
    const child = rec.startSpan('GET /x', SpanKind.CLIENT, root);
    for (const span of [root, child]) {
      assert.equal(span.isRecording(), false);
      assert.equal(sampled(span), false);
      assert.match(span.spanContext().spanId, /^[0-9a-f]{16}$/);
      span.setAttribute('a', 1).setStatus({ code: SpanStatusCode.ERROR }).addEvent('e');
      span.end();
    }
    assert.equal(ended.length, 0);
  });

  for (const name of ['traceidratio', 'parentbased_traceidratio']) {
    it(`${name} 0.5: about half the traces, and a child sampled as its query is (the ratio reads the trace id)`, () => {
      const { rec } = recorder(name, 0.5);
      let kept = 0;
      for (let i = 0; i < 2000; i++) {
        const root = rec.startSpan('q', SpanKind.SERVER);
        const child = rec.startSpan('GET /x', SpanKind.CLIENT, root);
        assert.equal(sampled(child), sampled(root));
        assert.equal(child.isRecording(), root.isRecording());
        if (sampled(root)) kept++;
      }
      assert.ok(kept > 800 && kept < 1200, `${kept} of 2000`);
    });
  }

  it('keep a status as the SDK does: OK is final, a message only with an ERROR; end once; nothing set after the end', () => {
    const { rec, ended } = recorder();
    const a = rec.startSpan('a', SpanKind.CLIENT);
    a.setStatus({ code: SpanStatusCode.OK, message: 'ignored' });
    a.setStatus({ code: SpanStatusCode.ERROR, message: 'late' });
    assert.deepEqual(a.status, { code: SpanStatusCode.OK });
    const b = rec.startSpan('b', SpanKind.CLIENT);
    b.setStatus({ code: SpanStatusCode.ERROR, message: 'timeout' });
    b.setAttribute('error.type', 'timeout').setAttribute('nothing', undefined);
    b.addEvent('ged145.backend.reconnect');
    b.end();
    b.end();
    b.setAttribute('after', 1);
    assert.deepEqual(b.status, { code: SpanStatusCode.ERROR, message: 'timeout' });
    assert.deepEqual(b.attributes, { 'error.type': 'timeout' });
    assert.deepEqual(b.events.map((e) => e.name), ['ged145.backend.reconnect']);
    assert.equal(b.isRecording(), false);
    assert.deepEqual(ended, [b]);
    assert.ok(b.duration[0] >= 0 && b.duration[1] >= 0);
  });
});
