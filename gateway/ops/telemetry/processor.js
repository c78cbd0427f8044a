'use strict';

// A batching span processor whose losses are counted: the SDK's BatchSpanProcessor keeps its
// drops to itself (a private count and a diagnostic line per drop), and a collector that is down
// must cost no query, only spans, visibly. A bounded queue; one export at a time, each bounded
// by the exporter's own timeout; a span past the queue's size, or in a batch the exporter could
// not deliver, is dropped and counted (onDrop); nothing here ever waits on the query's path.

const { TraceFlags } = require('@opentelemetry/api');
const { ExportResultCode } = require('@opentelemetry/core');

class CountedBatchProcessor {
  /** onDrop(count, reason, error): reason 'queue_full', 'export_failed' or 'shutdown' (see abandon). */
  constructor(exporter, {
    maxQueueSize, maxExportBatchSize, scheduledDelayMs, onDrop,
  }) {
    this.exporter = exporter;
    this.maxQueueSize = maxQueueSize;
    this.maxBatch = Math.min(maxExportBatchSize, maxQueueSize);
    this.delayMs = scheduledDelayMs;
    this.onDrop = onDrop;
    this.queue = [];
    this.exporting = null; // the promise of the export under way
    this.timer = null;
    this.closed = false;
    this.inFlight = 0; // spans in the export under way
    this.abandoned = false;
  }

  onStart() {}

  onEnd(span) {
    if (this.closed || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queue.length >= this.maxQueueSize) {
      this.onDrop(1, 'queue_full', null);
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= this.maxBatch) this.exportNext();
    else if (this.timer === null) this.schedule();
  }

  schedule() {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.exportNext();
    }, this.delayMs);
    this.timer.unref(); // a pending batch never keeps the process alive
  }

  /** Starts one export if none is under way; when it ends, the next batch follows (now if full, else after the delay). */
  exportNext() {
    if (this.exporting !== null || this.queue.length === 0) return this.exporting;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.queue.splice(0, this.maxBatch);
    this.inFlight = batch.length;
    this.exporting = new Promise((resolve) => {
      this.exporter.export(batch, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && !this.abandoned) this.onDrop(batch.length, 'export_failed', result.error || null);
        resolve();
      });
    }).then(() => {
      this.exporting = null;
      this.inFlight = 0;
      if (this.abandoned) return;
      if (this.queue.length >= this.maxBatch || (this.closed && this.queue.length > 0)) this.exportNext();
      else if (this.queue.length > 0 && this.timer === null) this.schedule();
    });
    return this.exporting;
  }

  /** Exports what is queued, batch after batch; resolves once the queue is empty. */
  async forceFlush() {
    while (!this.abandoned && (this.exporting !== null || this.queue.length > 0)) await (this.exporting || this.exportNext());
  }

  /** The stop's time is up: what is still queued or being exported is counted lost ('shutdown'), once. */
  abandon() {
    if (this.abandoned) return;
    this.abandoned = true;
    this.closed = true;
    const lost = this.queue.length + this.inFlight;
    this.queue.length = 0;
    if (this.timer !== null) clearTimeout(this.timer);
    if (lost > 0) this.onDrop(lost, 'shutdown', null);
  }

  async shutdown() {
    this.closed = true;
    await this.forceFlush();
    await this.exporter.shutdown();
  }
}

module.exports = { CountedBatchProcessor };
