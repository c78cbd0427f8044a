'use strict';

// Prometheus metrics (prom-client), one registry per gateway process. Label values come from a
// bounded set: subtypes beyond the first MAX_SUBTYPES seen are counted as "(other)".

const client = require('prom-client');

const MAX_SUBTYPES = 100;
const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1];

class Metrics {
  constructor({ prefix = 'ged145_', collectDefault = true } = {}) {
    this.registry = new client.Registry();
    const registers = [this.registry];
    if (collectDefault) client.collectDefaultMetrics({ register: this.registry, prefix });
    this.queries = new client.Counter({
      name: `${prefix}queries_total`, help: 'Queries answered, by subtype and outcome', labelNames: ['subtype', 'outcome'], registers,
    });
    this.queryDuration = new client.Histogram({
      name: `${prefix}query_duration_seconds`, help: 'Time from QUERY_REQ read to reply written, by outcome', labelNames: ['outcome'], buckets: LATENCY_BUCKETS, registers,
    });
    this.inFlight = new client.Gauge({ name: `${prefix}queries_in_flight`, help: 'Queries waiting for the backend', registers });
    this.sessions = new client.Gauge({ name: `${prefix}sessions`, help: 'Router connections, by state', labelNames: ['state'], registers });
    this.heartbeats = new client.Counter({ name: `${prefix}heartbeats_total`, help: 'HEARTBEAT_REQs answered', registers });
    this.protocolErrors = new client.Counter({
      name: `${prefix}protocol_errors_total`, help: 'Bad frames from routers, by error code', labelNames: ['code'], registers,
    });
    this.connectionsRefused = new client.Counter({
      name: `${prefix}connections_refused_total`, help: 'Connections closed before a session, by reason', labelNames: ['reason'], registers,
    });
    this.subtypes = new Map(); // subtype -> Map(outcome -> counter child)
    this.durations = new Map(); // outcome -> histogram child
    this.sessions.set({ state: 'connected' }, 0);
    this.sessions.set({ state: 'open' }, 0);
  }

  /** Hot path: label children are cached, so a query costs two increments. */
  observeQuery(subtype, outcome, seconds) {
    let key = subtype === undefined ? '(none)' : subtype;
    let byOutcome = this.subtypes.get(key);
    if (byOutcome === undefined) {
      if (this.subtypes.size >= MAX_SUBTYPES) {
        key = '(other)';
        byOutcome = this.subtypes.get(key);
      }
      if (byOutcome === undefined) {
        byOutcome = new Map();
        this.subtypes.set(key, byOutcome);
      }
    }
    let counter = byOutcome.get(outcome);
    if (counter === undefined) {
      counter = this.queries.labels(key, outcome);
      byOutcome.set(outcome, counter);
    }
    counter.inc();
    let hist = this.durations.get(outcome);
    if (hist === undefined) {
      hist = this.queryDuration.labels(outcome);
      this.durations.set(outcome, hist);
    }
    hist.observe(seconds);
  }

  text() {
    return this.registry.metrics();
  }
}

module.exports = { Metrics, LATENCY_BUCKETS };
