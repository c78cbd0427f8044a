'use strict';

// A gateway in this process: openGateway(), the start sequence every gateway process runs (this
// one, and each worker of a cluster: gateway/ops/cluster-worker.js), and ProcessRuntime, the
// runtime of a gateway that is one process (gateway/ops/runtime.js has the shape it shares with
// the cluster's primary, gateway/ops/cluster.js).

const { Gateway } = require('./server');
const { Runtime } = require('./ops/runtime');
const { createLogger } = require('../lib/logger');
const { listenError } = require('../lib/errors');
const warmup = require('./ops/warmup');
const { startTracing } = require('./ops/telemetry');
const { Metrics } = require('./ops/metrics');
const { attachMetrics } = require('./ops/attach');
const { Reports } = require('./ops/reports');
const { startDecisions } = require('./ops/decisions');

/**
 * The start sequence: the gateway, its warm-up, its traces, its GED-145 listener (on the fd the
 * service manager passed, or host and port). Resolves {gateway, metrics, reports, status(),
 * close(reason)}: close drains the gateway, then exports the last spans. A failed listen is an OperatorError naming the address,
 * with nothing left open.
 */
async function openGateway(config, { log, listenFd = null }) {
  // Traces before the gateway: its constructor sends its first token request, traced too.
  const tracing = startTracing(config, { log }); // null when off: the SDK is not loaded
  const gateway = new Gateway(config, { log });
  const metrics = new Metrics();
  const observed = attachMetrics(gateway, metrics); // its metrics and status, from its channels
  if (tracing) tracing.attach(gateway, { registry: metrics.registry });
  if (config.warmup) warmup.register(gateway);
  const stopTracing = () => (tracing ? tracing.stop() : undefined);
  // The half-hour view and the objectives live beside the gateway, not in what a reload replaces.
  const reports = new Reports({ registry: metrics.registry }).attach(gateway);
  const decisions = startDecisions(config, { gateway, log, registry: metrics.registry }); // null when off: nothing subscribed
  const stopDecisions = () => (decisions ? decisions.close() : undefined);
  try {
    await gateway.listen({ fd: listenFd });
  } catch (err) {
    await stopDecisions();
    reports.detach();
    await gateway.backend.close();
    observed.detach();
    await stopTracing();
    throw listenError(err, config.host, config.port);
  }
  return {
    gateway,
    metrics,
    reports,
    async status() {
      const status = { ...(await observed.status()), ...reports.toJSON() };
      status.processes[0].decisions = decisions ? decisions.toJSON() : null; // per process: a cluster's /status lists each worker's
      return status;
    },
    async close(reason) {
      await gateway.shutdown(reason);
      await stopDecisions(); // the records of the last queries, after them
      observed.detach();
      reports.detach();
      await stopTracing(); // the last spans, after the last queries
    },
  };
}

/** One process: one gateway, its admin port beside it. */
class ProcessRuntime extends Runtime {
  constructor(config, { log, listenFd = null } = {}) {
    super(config, { log: log || createLogger({ component: 'gateway', ...config.log }), listenFd });
    this.gateway = null;
    this.opened = null;
  }

  async open() {
    const { config } = this;
    // From now on the gateway's configuration is the running one: the first one, kept here, would
    // keep the handler modules it loaded after every reload replaced them.
    this.config = null;
    this.opened = await openGateway(config, { log: this.log, listenFd: this.listenFd });
    this.gateway = this.opened.gateway;
    this.port = this.gateway.port;
  }

  /** The gateway applies it (server.js reload()); resolves with how it went. */
  async apply(next) {
    const restartNeeded = this.gateway.reload(next);
    return { at: new Date().toISOString(), ok: true, restartNeeded };
  }

  /** There is no rolling restart without workers: the operator is told what to do instead. */
  async restart() {
    this.log.warn('SIGUSR2 asks for a rolling restart, which needs --workers 2 or more (the primary keeps the port while workers are replaced); '
      + 'this gateway is one process: restart it (with ged145.socket, a router waits in the socket\'s backlog meanwhile), '
      + 'or restart router sides A and B on their two hosts one at a time (docs/deploy.md)');
  }

  status() {
    return this.opened.status();
  }

  reports() {
    return this.opened.reports.toJSON();
  }

  health() {
    return { backend: this.gateway.backend.toJSON() };
  }

  notReady() {
    return this.gateway.draining ? 'draining' : this.gateway.backend.notReady();
  }

  sessions() {
    return this.gateway.toJSON();
  }

  metrics() {
    return this.opened.metrics.text();
  }

  get contentType() {
    return this.opened.metrics.registry.contentType;
  }

  close(reason) {
    return this.opened.close(reason);
  }
}

/** startGateway(config, {log, listenFd}): a started ProcessRuntime ({gateway, port, adminPort, reload, stop...}). */
function startGateway(config, options) {
  return new ProcessRuntime(config, options).start();
}

module.exports = { startGateway, openGateway, ProcessRuntime };
