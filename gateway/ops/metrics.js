'use strict';

// Prometheus metrics (prom-client), one registry per gateway process. Label values come from a
// bounded set, since any open session can send any subtype: the subtypes of configured routes
// always have their own label, plus the first `maxOtherSubtypes` others seen; the rest count as
// "(other)". Label values are printable ASCII, at most 64 characters.

const client = require('prom-client');
const { text: { printable } } = require('../../lib/protocol');
const { History } = require('./status');
const { TallyCounter, TallyHistogram } = require('./tally');
const { LIVE_STATES } = require('../session/states');

const OTHER = '(other)';
const NONE = '(none)';
const MAX_LABEL = 64;
const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1];

class Metrics {
  constructor({ prefix = 'ged145_', collectDefault = true } = {}) {
    this.registry = new client.Registry();
    const registers = [this.registry];
    // Node's own metrics keep their standard names (process_*, nodejs_*), so stock dashboards work.
    if (collectDefault) {
      client.collectDefaultMetrics({ register: this.registry });
      // Gauges named like counters, which promtool (and Prometheus's own naming rules) refuse;
      // nodejs_active_handles{type} and its siblings carry the same numbers, by type.
      for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
        this.registry.removeSingleMetric(name);
      }
    }
    // The four metrics every query updates are tallies (tally.js): a few additions per query, read at scrape time.
    this.queries = new TallyCounter({
      name: `${prefix}queries_total`, help: 'Queries answered, by subtype and outcome', labelNames: ['subtype', 'outcome'], registers,
    });
    this.queryDuration = new TallyHistogram({
      name: `${prefix}query_duration_seconds`, help: 'Time from QUERY_REQ read to reply written, by outcome', labelNames: ['outcome'], buckets: LATENCY_BUCKETS,
      registers,
    });
    const metrics = this;
    // Read from the gateway at scrape time, not kept up per query: two gauge updates on the path of
    // every query cost more than a sum now and then.
    this.gateway = null; // the gateway these metrics count (watch())
    this.inFlight = new client.Gauge({
      name: `${prefix}queries_in_flight`,
      help: 'Queries waiting for the backend',
      registers,
      collect() { this.set(metrics.gateway === null ? 0 : metrics.gateway.inFlight()); },
    });
    this.sessions = new client.Gauge({
      name: `${prefix}sessions`,
      help: 'Router connections by session state, each counted once: connected (no session yet), open, closing (after CLOSE_REQ)',
      labelNames: ['state'],
      registers,
      collect() {
        const counts = metrics.gateway === null ? {} : metrics.gateway.sessionCounts();
        for (const state of LIVE_STATES) this.set({ state }, counts[state] || 0);
      },
    });
    this.heartbeats = new client.Counter({ name: `${prefix}heartbeats_total`, help: 'HEARTBEAT_REQs answered', registers });
    this.protocolErrors = new client.Counter({
      name: `${prefix}protocol_errors_total`, help: 'Bad frames from routers, by error code', labelNames: ['code'], registers,
    });
    this.connectionsRefused = new client.Counter({
      name: `${prefix}connections_refused_total`, help: 'Connections closed before a session, by reason', labelNames: ['reason'], registers,
    });
    this.subtypes = new Map(); // subtype label -> Map(outcome -> counter child)
    this.knownLabels = new Set(); // configured routes' subtypes: never folded into (other)
    this.maxOtherSubtypes = 50;
    this.others = 0; // labels given to subtypes that are not configured routes
    this.durations = new Map(); // outcome -> its series of queryDuration
    this.history = new History(); // the last minutes second by second, for the status page (status.js)
    // The gateway's config the subtype labels were last set from, held weakly: a reload's old
    // config (its handler modules, their tables) must not live on here.
    this.configSeen = null;
  }

  /** The gateway whose figures these are (attach.js): its sessions and queries in flight are read at scrape time. */
  watch(gateway) {
    this.gateway = gateway;
    this.followConfig();
  }

  /** A reload's routes, read when a label is next made, since the gateway tells no one of its reloads. */
  followConfig() {
    const { gateway } = this;
    if (gateway === null || (this.configSeen !== null && this.configSeen.deref() === gateway.config)) return;
    const { config } = gateway;
    this.configSeen = new WeakRef(config);
    this.configureSubtypes(config.compiledRoutes.keys(), config.limits.maxSubtypeLabels);
  }

  /** The configured routes' subtype labels, as the gateway's config has them now. */
  get known() {
    this.followConfig();
    return this.knownLabels;
  }

  /** Which subtypes always get a label of their own, and how many others may. */
  configureSubtypes(routeSubtypes, maxOtherSubtypes) {
    this.knownLabels = new Set([...routeSubtypes].map(labelValue));
    this.maxOtherSubtypes = maxOtherSubtypes;
  }

  /** Hot path: tallies and series are kept per label set, so a query costs a few additions. */
  observeQuery(subtype, outcome, seconds) {
    let byOutcome = this.subtypes.get(subtype === undefined ? NONE : subtype);
    if (byOutcome === undefined) byOutcome = this.newSubtype(subtype);
    let tally = byOutcome.get(outcome);
    if (tally === undefined) {
      tally = this.queries.tally(byOutcome.label, outcome);
      byOutcome.set(outcome, tally);
    }
    tally.n++;
    let hist = this.durations.get(outcome);
    if (hist === undefined) {
      hist = this.queryDuration.labels(outcome);
      this.durations.set(outcome, hist);
    }
    hist.observe(seconds);
    this.history.query(byOutcome.label, outcome, seconds);
  }

  /** The outcome map of a subtype not seen before (or of "(other)" once the others are used up). */
  newSubtype(subtype) {
    let label = subtype === undefined ? NONE : labelValue(subtype);
    if (label !== NONE && !this.known.has(label)) {
      if (this.others >= this.maxOtherSubtypes) label = OTHER;
      else if (!this.subtypes.has(label)) this.others++;
    }
    let byOutcome = this.subtypes.get(label);
    if (byOutcome === undefined) {
      byOutcome = new Map();
      byOutcome.label = label;
      this.subtypes.set(label, byOutcome);
    }
    // Only labels are keys: a subtype whose label differs from it (cut, or '?' for a control
    // character) is looked up through newSubtype each time, so no router can grow this map.
    return byOutcome;
  }

  text() {
    return this.registry.metrics();
  }
}

/** A label value: printable ASCII (anything else becomes '?'), at most MAX_LABEL characters. */
function labelValue(text) {
  const s = printable(text);
  return s.length > MAX_LABEL ? `${s.slice(0, MAX_LABEL - 3)}...` : s;
}

module.exports = { Metrics };
