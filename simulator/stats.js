'use strict';

// What a run measured: counts by outcome and an HDR latency histogram (microseconds), latency
// taken from each query's scheduled send time so that a stalled host shows in the numbers.

const hdr = require('hdr-histogram-js');
const { STATUS_NAMES } = require('../lib/protocol');

const newHistogram = () => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });

class RunStats {
  constructor() {
    this.histogram = newHistogram();
    this.sent = 0; // logical queries
    this.unsent = 0; // due while no side had an open session
    this.ok = 0;
    this.failures = Object.create(null); // FAILURE_CONF status name -> count
    this.late = 0; // answered after requestTimeoutMs (also in ok/failures)
    this.timeout = 0; // never answered by the end of the run
    this.lost = 0; // in flight when a connection dropped, and not voided (below): unexpected
    this.violations = Object.create(null); // reason -> count
    this.heartbeats = { sent: 0, answered: 0, missed: 0 };
    this.injected = { reject: 0, fatal: 0 }; // invalid frames sent, by expected consequence
    this.caught = { reject: 0, fatal: 0 }; // ... and answered as expected
    // Sent behind an induced fatal frame, which the host never reads: rejects, further fatal
    // frames and queries that are expected to go unanswered.
    this.voided = { reject: 0, fatal: 0, queries: 0 };
    this.closes = Object.create(null); // why connections ended
    this.reconnects = 0;
    this.failureEvents = 0;
    this.startedAt = Date.now();
  }

  answered(latencyMs, status, lateMs) {
    this.histogram.recordValue(Math.max(1, Math.round(latencyMs * 1000)));
    if (status === 0) this.ok++;
    else {
      const name = STATUS_NAMES[status] || `status ${status}`;
      this.failures[name] = (this.failures[name] || 0) + 1;
    }
    if (latencyMs > lateMs) this.late++;
  }

  violation(reason) {
    this.violations[reason] = (this.violations[reason] || 0) + 1;
  }

  closed(reason) {
    this.closes[reason] = (this.closes[reason] || 0) + 1;
  }

  get answeredCount() {
    let n = this.ok;
    for (const v of Object.values(this.failures)) n += v;
    return n;
  }

  get violationCount() {
    return Object.values(this.violations).reduce((a, b) => a + b, 0);
  }

  percentile(p) {
    return this.histogram.totalCount === 0 ? 0 : this.histogram.getValueAtPercentile(p) / 1000;
  }

  summary(elapsedMs = Date.now() - this.startedAt) {
    const h = this.histogram;
    return {
      sent: this.sent,
      unsent: this.unsent,
      answered: this.answeredCount,
      ok: this.ok,
      failures: { ...this.failures },
      late: this.late,
      timeout: this.timeout,
      lost: this.lost,
      violations: { ...this.violations },
      heartbeats: { ...this.heartbeats },
      injected: { ...this.injected },
      caught: { ...this.caught },
      voided: { ...this.voided },
      closes: { ...this.closes },
      reconnects: this.reconnects,
      failureEvents: this.failureEvents,
      elapsedMs: Math.round(elapsedMs),
      txPerSec: elapsedMs > 0 ? (this.answeredCount * 1000) / elapsedMs : 0,
      latencyMs: {
        min: h.totalCount ? h.minNonZeroValue / 1000 : 0,
        mean: h.totalCount ? h.mean / 1000 : 0,
        p50: this.percentile(50),
        p90: this.percentile(90),
        p99: this.percentile(99),
        p999: this.percentile(99.9),
        max: h.totalCount ? h.maxValue / 1000 : 0,
      },
    };
  }
}

module.exports = { RunStats, newHistogram };
