'use strict';

// attachMetrics(gateway, metrics): the Prometheus metrics, the status history and the status of one
// gateway, fed by the channels its sessions and its backend publish (session/diagnostics.js,
// backend/diagnostics.js, docs/diagnostics.md). The core calls nothing here. One process may hold
// several gateways (the warm-up's private one, tests): one subscriber per channel for the process
// finds the figures of the message's own gateway, as backend-metrics.js does.

const { channels } = require('../session/diagnostics');
const { RecentLines, ProcessStatus } = require('./status');
const { watchBackend } = require('./backend-metrics');

/** gateway -> its Metrics: a message of a gateway nobody keeps figures for finds none. */
const watched = new WeakMap();

const SUBSCRIBERS = [
  [channels.querySettle, ({ gateway, query, outcome, ms }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.observeQuery(query.subtype, outcome, ms / 1000);
  }],
  [channels.heartbeat, ({ gateway }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.heartbeats.inc();
  }],
  [channels.protocolError, ({ gateway, code }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.protocolErrors.inc({ code });
  }],
  [channels.connectionRefused, ({ gateway, reason }) => {
    const m = watched.get(gateway);
    if (m !== undefined) m.connectionsRefused.inc({ reason });
  }],
];
let subscribed = false;

class GatewayObserver {
  constructor(gateway, metrics) {
    this.gateway = gateway;
    this.metrics = metrics;
    this.processStatus = null; // made at the first look at the status page
    this.recent = new RecentLines(); // the last warnings, for the status page
    if (typeof gateway.log.add === 'function') gateway.log.add(this.recent);
    metrics.watch(gateway);
    watchBackend(metrics, gateway);
    if (!subscribed) {
      subscribed = true;
      for (const [channel, onMessage] of SUBSCRIBERS) channel.subscribe(onMessage);
    }
    watched.set(gateway, metrics);
  }

  /** What the admin port's status page shows of this process (ops/status.js): the gateway's own view and the figures counted here. */
  async status() {
    if (this.processStatus === null) this.processStatus = new ProcessStatus();
    const refused = {};
    for (const v of (await this.metrics.connectionsRefused.get()).values) refused[v.labels.reason] = v.value;
    const core = this.gateway.snapshot();
    return {
      processes: [{ role: 'gateway', ...this.processStatus.toJSON() }],
      config: core.config,
      listener: core.listener,
      sessions: core.sessions,
      refused,
      history: this.metrics.history.toJSON(),
      backend: core.backend,
      handlers: core.handlers,
      warnings: this.recent.lines,
      connectionWarnings: this.recent.connectionLines,
    };
  }

  /** The gateway stopped: its log keeps no transport of ours, and the event-loop monitor stops. */
  detach() {
    if (typeof this.gateway.log.remove === 'function') this.gateway.log.remove(this.recent);
    if (this.processStatus !== null) this.processStatus.close();
    this.processStatus = null;
  }
}

/** Counts gateway's messages in metrics (its status history included); returns the observer (status(), detach()). */
function attachMetrics(gateway, metrics) {
  return new GatewayObserver(gateway, metrics);
}

module.exports = { attachMetrics };
