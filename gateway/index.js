'use strict';

// startGateway(config): the gateway with its admin port, in this process (gateway/ops/cluster.js runs
// several of them as worker processes).

const { Gateway } = require('./server');
const { startAdmin } = require('./ops/admin');
const { createLogger } = require('../lib/logger');
const { listenError } = require('../lib/errors');
const warmup = require('./ops/warmup');
const { startTracing } = require('./ops/telemetry');

/** listenFd: a listening socket the service manager passed (gateway/ops/listen-fds.js), used instead of host and port. */
async function startGateway(config, { log, listenFd = null } = {}) {
  const logger = log || createLogger({ component: 'gateway', ...config.log });
  const gateway = new Gateway(config, { log: logger });
  if (config.warmup) warmup.register(gateway);
  const tracing = startTracing(gateway, config, { log: logger }); // null when off: the SDK is not loaded
  try {
    await gateway.listen({ fd: listenFd });
  } catch (err) {
    await gateway.resolver.close();
    if (tracing) await tracing.stop();
    throw listenError(err, config.host, config.port);
  }
  let admin = null;
  try {
    admin = await startAdmin(config.admin, logger, {
      health: () => ({ backend: gateway.resolver.toJSON() }),
      notReady: () => (gateway.draining ? 'draining' : gateway.resolver.backend.notReady()),
      sessions: () => gateway.toJSON(),
      metrics: () => gateway.metrics.text(),
      contentType: gateway.metrics.registry.contentType,
      status: () => gateway.status(),
    });
  } catch (err) {
    await gateway.shutdown('admin port failed');
    if (tracing) await tracing.stop();
    throw err;
  }
  return {
    gateway,
    reload: (next) => gateway.reload(next),
    reloadRefused: (message) => gateway.reloadRefused(message),
    port: gateway.port,
    adminPort: admin === null ? null : admin.port,
    async stop(reason) {
      await gateway.shutdown(reason);
      if (tracing) await tracing.stop(); // the last spans, after the last queries
      if (admin !== null) await admin.close();
    },
  };
}

module.exports = { startGateway };
