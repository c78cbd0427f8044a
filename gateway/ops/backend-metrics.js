'use strict';

// The backend's Prometheus metrics, kept by subscribing to the backend's diagnostics channels
// (gateway/backend/diagnostics.js, docs/diagnostics.md): the backend knows nothing of them. Each
// gateway's figures go to its own Metrics registry, counted from the messages that carry that
// gateway (a process may hold several: tests, the warm-up's private one). The gauges are read
// from the gateway's current backend when Prometheus scrapes, so a reload needs no bookkeeping.

const client = require('prom-client');
const { channels } = require('../backend/diagnostics');
const { text: { printable } } = require('../../lib/protocol');
const { TallyCounter, TallyHistogram } = require('./tally');

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1];
const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx', '6xx', '7xx', '8xx', '9xx']; // backend_responses_total{class}
const CIRCUIT_VALUES = Object.freeze({ closed: 0, 'half-open': 1, open: 2 });
const MAX_LABEL = 64;
const MAX_FIELD_LABELS = 100;

/** gateway -> its BackendMetrics: a message of a gateway nobody keeps figures for finds none. */
const watched = new WeakMap();

class BackendMetrics {
  /** metrics: the gateway's Metrics (its registry, its configured subtypes, its history); gateway: whose figures these are. */
  constructor(metrics, gateway, { prefix = 'ged145_' } = {}) {
    this.metrics = metrics;
    this.gateway = gateway;
    const registers = [metrics.registry];
    this.responses = new TallyCounter({
      name: `${prefix}backend_responses_total`, help: 'Backend HTTP answers by status class (2xx, 4xx, 5xx...), and requests that got none (error)',
      labelNames: ['class'], registers,
    });
    this.duration = new TallyHistogram({
      name: `${prefix}backend_duration_seconds`, help: 'Backend HTTP round trip, request sent to body read', buckets: LATENCY_BUCKETS, registers,
    });
    this.series = this.duration.labels();
    this.classes = new Map(); // '2xx', '5xx'..., 'error' -> its tally of responses
    this.defineGauges(prefix, registers);
    this.defineCounters(prefix, registers);
  }

  /** The gauges, read from the gateway's backend at scrape time. */
  defineGauges(prefix, registers) {
    const { gateway, metrics } = this;
    new client.Gauge({
      name: `${prefix}backend_up`,
      help: '1 while the backend answers, 0 after a run of failed queries (see /health): without labels the worst of all, '
        + 'with {origin} an origin (the worst of its routes), with {origin,route} one configured route on one origin',
      labelNames: ['origin', 'route'],
      aggregator: 'min', // --workers: down when any worker sees it down
      registers,
      collect() { backendUp(this, gateway.backend.health, metrics.known); },
    });
    new client.Gauge({
      name: `${prefix}backend_circuit_state`,
      help: 'Circuit breaker per backend origin: 0 closed, 1 half-open, 2 open',
      labelNames: ['origin'],
      registers,
      collect() {
        for (const [origin, state] of Object.entries(gateway.backend.circuitStates())) this.set({ origin }, CIRCUIT_VALUES[state]);
      },
    });
    const cache = () => gateway.backend.cacheFigures();
    new client.Gauge({
      name: `${prefix}cache_entries`, help: 'Answers in this process\'s cache', registers, collect() { this.set((cache() || { entries: 0 }).entries); },
    });
    new client.Gauge({
      name: `${prefix}cache_bytes`,
      help: 'Bytes of the answers in this process\'s cache (bounded by cache.maxBytes)',
      registers,
      collect() { this.set((cache() || { bytes: 0 }).bytes); },
    });
    new client.Gauge({
      name: `${prefix}cache_store_up`,
      help: 'The shared cache store: 1 connected, 0 connecting, unreachable or unresponsive (nothing is sent to it); no sample without one',
      labelNames: ['store'],
      registers,
      collect() {
        this.reset();
        const figures = cache();
        if (figures && figures.store) this.labels('redis').set(figures.store === 'connected' ? 1 : 0);
      },
    });
  }

  /** The counters, kept up by the channels' subscribers below. */
  defineCounters(prefix, registers) {
    this.retries = new client.Counter({
      name: `${prefix}backend_retries_total`, help: 'Requests sent again to the next origin after the first never reached its backend', registers,
    });
    this.hedges = new client.Counter({
      name: `${prefix}backend_hedges_total`,
      help: 'Hedged requests (backend.hedge), by result: won (its answer was the query\'s), lost (the first request\'s was), '
        + 'over_budget (due, not sent: backend.hedge.maxPercent reached)',
      labelNames: ['result'],
      registers,
    });
    this.reconnects = new client.Counter({
      name: `${prefix}backend_reconnects_total`,
      help: 'Requests sent again on another connection after a reused keep-alive connection broke before any answer',
      registers,
    });
    this.failures = new client.Counter({
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
    this.authRetries = new client.Counter({
      name: `${prefix}backend_auth_retries_total`, help: 'Requests sent again with a new OAuth2 token after the API answered 401', registers,
    });
    this.tokenRequests = new client.Counter({
      name: `${prefix}backend_token_requests_total`,
      help: 'OAuth2 token requests to the token endpoint, by result (ok, error)',
      labelNames: ['result'],
      registers,
    });
    this.cacheLookups = new client.Counter({
      name: `${prefix}cache_lookups_total`,
      help: 'Answer cache lookups: hit (fresh), stale (served because the backend failed), miss, bypass (a key field missing or empty: not cached)',
      labelNames: ['result'],
      registers,
    });
    this.cacheStoreErrors = new client.Counter({
      name: `${prefix}cache_store_errors_total`, help: 'Failed reads and writes of the shared cache store (Redis)', registers,
    });
    this.shadow = new client.Counter({
      name: `${prefix}shadow_total`,
      help: 'Shadowed queries by route, candidate and result: same, different, candidate_failed, live_failed, dropped (over the cap: not sent)',
      labelNames: ['subtype', 'candidate', 'result'],
      registers,
    });
    this.shadowFields = new client.Counter({
      name: `${prefix}shadow_differences_total`,
      help: 'Fields a candidate answered differently from the live route (status, error, vars.N, ecc.NAME, eccArrays.NAME, ced, cdpd)',
      labelNames: ['subtype', 'candidate', 'field'],
      registers,
    });
    this.fieldLabels = new Set(); // the field labels given so far: an answer's ECC names are the backend's, so they are bounded
    this.canary = new client.Counter({
      name: `${prefix}canary_total`, help: 'Queries a canary\'s candidate answered, by route and candidate', labelNames: ['subtype', 'candidate'], registers,
    });
    this.canaryRollbacks = new client.Counter({
      name: `${prefix}canary_rollbacks_total`,
      help: 'Canaries stopped because their candidate failed more than the live route',
      labelNames: ['subtype', 'candidate'],
      registers,
    });
  }

  /** A difference's field as a label: an ECC_ARRAY element by its array's name, at most MAX_FIELD_LABELS of them, the rest "(other)". */
  fieldLabel(field) {
    const label = labelValue(field.replace(/\[\d+\]$/, ''));
    if (this.fieldLabels.has(label)) return label;
    if (this.fieldLabels.size >= MAX_FIELD_LABELS) return '(other)';
    this.fieldLabels.add(label);
    return label;
  }

  /** Hot path: one backend request's end, by class ('2xx', '5xx'..., or 'error' for no answer), and its round trip if it got one. */
  observe(responseClass, seconds) {
    let tally = this.classes.get(responseClass);
    if (tally === undefined) {
      tally = this.responses.tally(responseClass);
      this.classes.set(responseClass, tally);
    }
    tally.n++;
    if (seconds !== null) this.series.observe(seconds);
    this.metrics.history.backend(responseClass, seconds);
  }

  /** No more figures for this gateway: its messages are no longer counted. */
  close() {
    if (watched.get(this.gateway) === this) watched.delete(this.gateway);
  }
}

/** ged145_backend_up from the backend's health: the process's worst, each origin's, each configured route's. */
function backendUp(gauge, health, known) {
  gauge.reset();
  gauge.set(health.state === 'reachable' ? 1 : 0);
  const origins = new Map();
  for (const lane of health.lanes()) {
    const up = lane.state === 'reachable' ? 1 : 0;
    // A route of its own for configured routes only: a router's subtypes are its text, and unbounded.
    const route = labelValue(lane.route);
    if (known.has(route)) gauge.set({ origin: lane.origin, route }, up);
    origins.set(lane.origin, Math.min(up, origins.has(lane.origin) ? origins.get(lane.origin) : 1));
  }
  for (const [origin, up] of origins) gauge.set({ origin }, up);
}

/** A label value: printable ASCII (anything else becomes '?'), at most MAX_LABEL characters. */
function labelValue(text) {
  const s = printable(text);
  return s.length > MAX_LABEL ? `${s.slice(0, MAX_LABEL - 3)}...` : s;
}

// One subscriber per channel for the process, which finds the figures of the message's gateway.
const SUBSCRIBERS = [
  [channels.requestStart, ({ gateway, request }) => {
    const m = watched.get(gateway);
    if (m === undefined || request.retry === null) return;
    if (request.retry === 'failover') m.retries.inc();
    else if (request.retry === 'auth') m.authRetries.inc();
  }],
  [channels.requestEnd, ({
    gateway, request, statusCode, ms,
  }) => {
    const m = watched.get(gateway);
    if (m !== undefined && request.kind === 'query') m.observe(STATUS_CLASSES[Math.floor(statusCode / 100)] || 'other', ms / 1000);
  }],
  [channels.requestError, ({ gateway, request, reason }) => {
    const m = watched.get(gateway);
    if (m !== undefined && request.kind === 'query' && reason !== 'aborted') m.observe('error', null); // the router gone: no failure of the backend
  }],
  [channels.requestReconnect, ({ gateway }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.reconnects.inc();
  }],
  [channels.hedge, ({ gateway, result }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.hedges.labels(result).inc();
  }],
  [channels.failure, ({ gateway, reason }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.failures.labels(reason).inc();
  }],
  [channels.shadowResult, ({
    gateway, subtype, candidate, result, differences,
  }) => {
    const m = watched.get(gateway);
    if (m === undefined) return;
    const route = labelValue(String(subtype));
    m.shadow.labels(route, candidate, result).inc();
    for (const { field } of differences) m.shadowFields.labels(route, candidate, m.fieldLabel(field)).inc();
  }],
  [channels.canaryAnswer, ({ gateway, subtype, candidate }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.canary.labels(labelValue(String(subtype)), candidate).inc();
  }],
  [channels.canaryRollback, ({ gateway, subtype, candidate }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.canaryRollbacks.labels(labelValue(String(subtype)), candidate).inc();
  }],
  [channels.token, ({ gateway, ok }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.tokenRequests.labels(ok ? 'ok' : 'error').inc();
  }],
  [channels.handlerError, ({ gateway, route, kind }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.handlerErrors.labels(route === undefined ? '(none)' : labelValue(String(route)), kind).inc();
  }],
  [channels.cacheLookup, ({ gateway, result }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.cacheLookups.labels(result).inc();
  }],
  [channels.cacheStoreError, ({ gateway }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.cacheStoreErrors.inc();
  }],
];
let subscribed = false;

/**
 * The backend's metrics of gateway, in metrics' registry, from now on (made once per gateway).
 * The channels are subscribed to once per process, at the first gateway watched.
 */
function watchBackend(metrics, gateway) {
  if (!subscribed) {
    subscribed = true;
    for (const [channel, onMessage] of SUBSCRIBERS) channel.subscribe(onMessage);
  }
  const figures = new BackendMetrics(metrics, gateway);
  watched.set(gateway, figures);
  return figures;
}

module.exports = { watchBackend };
