'use strict';

// startGateway(config): the gateway with its admin port, in this process (gateway/ops/cluster.js runs
// several of them as worker processes).

const { Gateway } = require('./server');
const { createAdminApp, listenAdmin } = require('./ops/admin');
const { createLogger } = require('../lib/logger');
const { OperatorError } = require('../lib/errors');

async function startGateway(config, { log } = {}) {
  const logger = log || createLogger({ component: 'gateway', ...config.log });
  const gateway = new Gateway(config, { log: logger });
  try {
    await gateway.listen();
  } catch (err) {
    await gateway.resolver.close();
    throw listenError(err, config.host, config.port);
  }
  let admin = null;
  if (config.admin.port !== null) {
    const app = createAdminApp({
      health: () => ({ backend: gateway.resolver.toJSON() }),
      ready: () => !gateway.draining,
      sessions: () => gateway.toJSON(),
      metrics: () => gateway.metrics.text(),
      contentType: gateway.metrics.registry.contentType,
    });
    try {
      admin = await listenAdmin(app, config.admin.port, config.admin.host);
    } catch (err) {
      await gateway.shutdown('admin port failed');
      throw listenError(err, config.admin.host, config.admin.port);
    }
    logger.info(`admin on http://${config.admin.host}:${admin.address().port} (/health /ready /sessions /metrics)`);
  }
  return {
    gateway,
    reload: (next) => gateway.reload(next),
    port: gateway.port,
    adminPort: admin ? admin.address().port : null,
    async stop(reason) {
      await gateway.shutdown(reason);
      if (admin) {
        admin.closeAllConnections();
        await new Promise((r) => admin.close(r));
      }
    },
  };
}

function listenError(err, host, port) {
  if (err.code === 'EADDRINUSE') return new OperatorError(`port ${port} on ${host} is already in use`);
  if (err.code === 'EACCES') return new OperatorError(`not allowed to listen on ${host}:${port}`);
  if (err.code === 'EADDRNOTAVAIL') return new OperatorError(`cannot listen on ${host}:${port}: ${host} is not an address of this machine`);
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return new OperatorError(`cannot listen on ${host}:${port}: no such host name`);
  return err;
}

module.exports = { startGateway, listenError };
