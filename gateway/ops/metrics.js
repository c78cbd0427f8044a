'use strict';

// Prometheus metrics (prom-client), one registry per gateway process. Label values come from a
// bounded set, since any open session can send any subtype: the subtypes of configured routes
// always have their own label, plus the first `maxOtherSubtypes` others seen; the rest count as
// "(other)". Label values are printable ASCII, at most 64 characters.

const client = require('prom-client');
const { text: { printable } } = require('../../lib/protocol');
const { History } = require('./status');
const { TallyCounter, TallyHistogram } = require('./tally');

const OTHER = '(other)';
const SESSION_STATES = Object.freeze(['connected', 'open', 'closing']);
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
    // Read at scrape time, not kept up per query: two gauge updates on the path of every query cost more than a sum now and then.
    this.queriesInFlight = () => 0; // set by the gateway: queries waiting for the backend, over its sessions
    this.inFlight = new client.Gauge({
      name: `${prefix}queries_in_flight`, help: 'Queries waiting for the backend', registers, collect() { this.set(metrics.queriesInFlight()); },
    });
    this.sessionStates = () => ({}); // set by the gateway: {state: count} of its connections
    this.sessions = new client.Gauge({
      name: `${prefix}sessions`,
      help: 'Router connections by session state, each counted once: connected (no session yet), open, closing (after CLOSE_REQ)',
      labelNames: ['state'],
      registers,
      collect() {
        const counts = metrics.sessionStates();
        for (const state of SESSION_STATES) this.set({ state }, counts[state] || 0);
      },
    });
    this.heartbeats = new client.Counter({ name: `${prefix}heartbeats_total`, help: 'HEARTBEAT_REQs answered', registers });
    this.protocolErrors = new client.Counter({
      name: `${prefix}protocol_errors_total`, help: 'Bad frames from routers, by error code', labelNames: ['code'], registers,
    });
    this.connectionsRefused = new client.Counter({
      name: `${prefix}connections_refused_total`, help: 'Connections closed before a session, by reason', labelNames: ['reason'], registers,
    });
    this.backendResponses = new TallyCounter({
      name: `${prefix}backend_responses_total`, help: 'Backend HTTP answers by status class (2xx, 4xx, 5xx...), and requests that got none (error)',
      labelNames: ['class'], registers,
    });
    this.backendDuration = new TallyHistogram({
      name: `${prefix}backend_duration_seconds`, help: 'Backend HTTP round trip, request sent to body read', buckets: LATENCY_BUCKETS, registers,
    });
    this.backendHealth = () => null; // set by the resolver: the backend's BackendHealth (its lanes), or null
    this.backendUp = new client.Gauge({
      name: `${prefix}backend_up`,
      help: '1 while the backend answers, 0 after a run of failed queries (see /health): without labels the worst of all, '
        + 'with {origin} an origin (the worst of its routes), with {origin,route} one configured route on one origin',
      labelNames: ['origin', 'route'],
      aggregator: 'min', // --workers: down when any worker sees it down
      registers,
      collect() {
        this.reset();
        const health = metrics.backendHealth();
        if (health === null) {
          this.set(1);
          return;
        }
        this.set(health.state === 'reachable' ? 1 : 0);
        const origins = new Map();
        for (const lane of health.lanes()) {
          const up = lane.state === 'reachable' ? 1 : 0;
          // A route of its own for configured routes only: a router's subtypes are its text, and unbounded.
          const route = labelValue(lane.route);
          if (metrics.known.has(route)) this.set({ origin: lane.origin, route }, up);
          origins.set(lane.origin, Math.min(up, origins.has(lane.origin) ? origins.get(lane.origin) : 1));
        }
        for (const [origin, up] of origins) this.set({ origin }, up);
      },
    });
    this.backendRetries = new client.Counter({
      name: `${prefix}backend_retries_total`, help: 'Requests sent again to the next origin after the first never reached its backend', registers,
    });
    this.backendReconnects = new client.Counter({
      name: `${prefix}backend_reconnects_total`,
      help: 'Requests sent again on another connection after a reused keep-alive connection broke before any answer',
      registers,
    });
    this.backendFailures = new client.Counter({
      name: `${prefix}backend_failures_total`,
      help: 'Backend requests that got no usable answer, by reason (tls_error, unauthorized, auth_failed, reset, http_503...)',
      labelNames: ['reason'],
      registers,
    });
    this.handlerErrors = new client.Counter({
      name: `${prefix}handler_errors_total`,
      help: 'Errors of handler modules, by route (subtype) and kind: uncaught_exception and unhandled_rejection (escaped the query: '
        + 'logged, the gateway goes on), bad_answer (not an object: E_AG_HOST_ERROR1)',
      labelNames: ['subtype', 'kind'],
      registers,
    });
    this.backendAuthRetries = new client.Counter({
      name: `${prefix}backend_auth_retries_total`, help: 'Requests sent again with a new OAuth2 token after the API answered 401', registers,
    });
    this.tokenRequests = new client.Counter({
      name: `${prefix}backend_token_requests_total`,
      help: 'OAuth2 token requests to the token endpoint, by result (ok, error)',
      labelNames: ['result'],
      registers,
    });
    this.breakerState = new client.Gauge({
      name: `${prefix}backend_circuit_state`, help: 'Circuit breaker per backend origin: 0 closed, 1 half-open, 2 open', labelNames: ['origin'], registers,
    });
    this.cacheLookups = new client.Counter({
      name: `${prefix}cache_lookups_total`,
      help: 'Answer cache lookups: hit (fresh), stale (served because the backend failed), miss, bypass (a key field missing or empty: not cached)',
      labelNames: ['result'],
      registers,
    });
    this.cacheSize = () => null; // set by the resolver: {entries, bytes} of the process's answer cache, or null without one
    this.cacheEntries = new client.Gauge({
      name: `${prefix}cache_entries`,
      help: 'Answers in this process\'s cache',
      registers,
      collect() { this.set((metrics.cacheSize() || { entries: 0 }).entries); },
    });
    this.cacheBytes = new client.Gauge({
      name: `${prefix}cache_bytes`,
      help: 'Bytes of the answers in this process\'s cache (bounded by cache.maxBytes)',
      registers,
      collect() { this.set((metrics.cacheSize() || { bytes: 0 }).bytes); },
    });
    this.cacheStoreErrors = new client.Counter({
      name: `${prefix}cache_store_errors_total`, help: 'Failed reads and writes of the shared cache store (Redis)', registers,
    });
    this.cacheStoreUp = new client.Gauge({
      name: `${prefix}cache_store_up`,
      help: 'The shared cache store: 1 connected, 0 connecting, unreachable or unresponsive (nothing is sent to it); no sample without one',
      labelNames: ['store'],
      registers,
      collect() {
        this.reset();
        const cache = metrics.cacheSize();
        if (cache && cache.store) this.labels('redis').set(cache.store === 'connected' ? 1 : 0);
      },
    });
    this.subtypes = new Map(); // subtype label -> Map(outcome -> counter child)
    this.known = new Set(); // configured routes' subtypes: never folded into (other)
    this.maxOtherSubtypes = 50;
    this.others = 0; // labels given to subtypes that are not configured routes
    this.durations = new Map(); // outcome -> its series of queryDuration
    this.responseClasses = new Map(); // '2xx', '5xx'..., 'error' -> its tally of backendResponses
    this.backendSeries = this.backendDuration.labels();
    this.history = new History(); // the last minutes second by second, for the status page (status.js)
  }

  /** Which subtypes always get a label of their own, and how many others may. */
  configureSubtypes(routeSubtypes, maxOtherSubtypes) {
    this.known = new Set([...routeSubtypes].map(labelValue));
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

  /** Hot path: one backend request's end, by class ('2xx', '5xx'..., or 'error' for no answer), and its round trip if it got one. */
  observeBackend(responseClass, seconds) {
    let tally = this.responseClasses.get(responseClass);
    if (tally === undefined) {
      tally = this.backendResponses.tally(responseClass);
      this.responseClasses.set(responseClass, tally);
    }
    tally.n++;
    if (seconds !== null) this.backendSeries.observe(seconds);
    this.history.backend(responseClass, seconds);
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
