'use strict';

// Per-second series of a run, for the charts: answers/s, latency percentiles of that second,
// and errors of that second, taken from the router simulator's reply events. The backend's own
// "no" (app_error, which our gateway answers E_AG_HOST_ERROR2) is a series of its own, apart
// from the failures, as on the gateway's status page.

const { newHistogram } = require('../simulator/stats');
const { STATUS } = require('../lib/protocol');

class Timeline {
  constructor(router, { intervalMs = 1000 } = {}) {
    this.router = router;
    this.intervalMs = intervalMs;
    this.points = [];
    this.hist = newHistogram();
    this.answers = 0;
    this.errors = 0;
    this.appErrors = 0;
    this.t0 = Date.now();
    this.last = this.t0;
    this.onReply = (msg, latencyMs) => {
      this.answers++;
      if (msg.status === STATUS.E_AG_HOST_ERROR2) this.appErrors++;
      else if (msg.status !== STATUS.E_AG_NO_ERROR) this.errors++;
      this.hist.recordValue(Math.max(1, Math.round(latencyMs * 1000)));
    };
  }

  start() {
    this.t0 = Date.now();
    this.last = this.t0;
    this.router.on('reply', this.onReply);
    this.timer = setInterval(() => this.flush(), this.intervalMs);
    return this;
  }

  flush() {
    const h = this.hist;
    const n = h.totalCount;
    const now = Date.now();
    // Rates over the time this point covers: the last one, at stop(), is usually shorter.
    const perSec = 1000 / Math.max(1, now - this.last);
    this.last = now;
    this.points.push({
      t: Math.round((now - this.t0) / 100) / 10,
      txPerSec: this.answers * perSec,
      okPerSec: (this.answers - this.errors - this.appErrors) * perSec,
      appErrorPerSec: this.appErrors * perSec,
      failedPerSec: this.errors * perSec,
      errors: this.errors,
      p50: n ? h.getValueAtPercentile(50) / 1000 : null,
      p99: n ? h.getValueAtPercentile(99) / 1000 : null,
      max: n ? h.maxValue / 1000 : null,
      inFlight: this.router.outstanding.size,
    });
    h.reset();
    this.answers = 0;
    this.errors = 0;
    this.appErrors = 0;
  }

  stop() {
    clearInterval(this.timer);
    this.router.off('reply', this.onReply);
    if (this.answers > 0) this.flush();
    return this.points;
  }
}

/** The latency distribution of a whole run: [{percentile, ms}] on a log-spaced percentile axis. */
function distribution(histogram) {
  if (histogram.totalCount === 0) return [];
  const ps = [0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100];
  return ps.map((p) => ({ percentile: p, ms: histogram.getValueAtPercentile(p) / 1000 }));
}

module.exports = { Timeline, distribution };
