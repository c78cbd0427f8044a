'use strict';

// --workers N: a primary process serves the admin port (metrics aggregated from every worker,
// sessions and health asked of each) and N worker processes share the GED-145 port through
// node:cluster. Workers are restarted when they die; SIGTERM drains them all.

const cluster = require('node:cluster');
const { AggregatorRegistry } = require('prom-client');
const { Gateway } = require('./server');
const { Metrics } = require('./metrics');
const { createAdminApp, listenAdmin } = require('./admin');
const { createLogger } = require('../lib/logger');
const { compileConfig } = require('./config');

const ASK = 'ged145:ask';
const READY = 'ged145:ready';
const ANSWER = 'ged145:answer';

/** Worker side: a gateway without its own admin port; answers the primary's questions. */
async function runWorker(config) {
  const log = createLogger({ component: `gateway[${process.pid}]`, ...config.log });
  const metrics = new Metrics();
  AggregatorRegistry.setRegistries([metrics.registry]);
  new AggregatorRegistry(); // installs the worker's answer to the primary's metrics requests
  const gateway = new Gateway(config, { log, metrics });
  const port = await gateway.listen();
  process.send({ type: READY, port });
  process.on('message', (msg) => {
    if (msg && msg.type === ASK && msg.what === 'health') {
      process.send({ type: ANSWER, id: msg.id, data: { pid: process.pid, backend: gateway.resolver.toJSON() } });
    } else if (msg && msg.type === ASK && msg.what === 'sessions') {
      process.send({ type: ANSWER, id: msg.id, data: gateway.toJSON().map((s) => ({ ...s, pid: process.pid })) });
    } else if (msg && msg.type === ASK && msg.what === 'reload') {
      try {
        const next = compileConfig(msg.settings, { baseDir: msg.settings.baseDir, env: { GED145_DES_KEY: process.env.GED145_DES_KEY } });
        gateway.reload(next);
      } catch (err) {
        log.error(`reload refused, the running configuration stays in force: ${err.message}`);
      }
    } else if (msg && msg.type === ASK && msg.what === 'shutdown') {
      gateway.shutdown('primary asked').then(() => process.exit(0));
    }
  });
  const stop = () => gateway.shutdown('signal').then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', () => {}); // the primary coordinates Ctrl-C
  process.on('SIGHUP', () => {}); // and reloads: a SIGHUP to the whole group must not end a worker
}

async function startCluster(config, { log } = {}) {
  const logger = log || createLogger({ component: 'gateway', ...config.log });
  const aggregator = new AggregatorRegistry();
  let nextId = 1;
  let draining = false;
  const ask = (what) => Promise.all(Object.values(cluster.workers).map((w) => new Promise((resolve) => {
    const id = nextId++;
    const onMessage = (msg) => {
      if (msg && msg.type === ANSWER && msg.id === id) {
        w.off('message', onMessage);
        resolve(msg.data);
      }
    };
    w.on('message', onMessage);
    w.send({ type: ASK, what, id });
    setTimeout(() => { w.off('message', onMessage); resolve([]); }, 2000).unref();
  })));

  cluster.setupPrimary({ exec: require.resolve('./worker'), args: [] });
  // The validated settings, as plain JSON; the worker compiles routes and reads the key itself.
  const env = { GED145_WORKER_CONFIG: JSON.stringify(config) };
  const fork = () => cluster.fork(env);
  for (let i = 0; i < config.workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (draining) return;
    logger.error(`worker ${worker.process.pid} exited (${signal || code}); starting another`);
    fork();
  });
  let port = config.port;
  await new Promise((resolve) => {
    let ready = 0;
    // Each worker says when its GED-145 listener is up (cluster's own 'listening' event would
    // also fire for any other server a worker opens).
    cluster.on('message', (worker, msg) => {
      if (!msg || msg.type !== READY) return;
      port = msg.port; // with port 0 the workers share one port the primary picked
      ready++;
      if (ready === config.workers) resolve();
    });
  });
  logger.info(`${config.workers} workers listening for ICM routers on ${config.host}:${port}`);

  let admin = null;
  if (config.admin.port !== null) {
    const app = createAdminApp({
      health: async () => ({ workers: await ask('health') }),
      ready: () => !draining,
      sessions: async () => (await ask('sessions')).flat(),
      metrics: () => aggregator.clusterMetrics(),
      contentType: aggregator.contentType,
    });
    admin = await listenAdmin(app, config.admin.port, config.admin.host);
    logger.info(`admin on http://${config.admin.host}:${admin.address().port} (/health /ready /sessions /metrics)`);
  }
  return {
    port,
    adminPort: admin ? admin.address().port : null,
    /** SIGHUP: the primary validated the new settings; each worker compiles and applies them. */
    reload(next) {
      env.GED145_WORKER_CONFIG = JSON.stringify(next); // a worker started later starts with it too
      for (const w of Object.values(cluster.workers)) w.send({ type: ASK, what: 'reload', id: 0, settings: JSON.parse(JSON.stringify(next)) });
      logger.info(`configuration sent to ${Object.keys(cluster.workers).length} workers`);
    },
    async stop() {
      draining = true;
      const exits = Object.values(cluster.workers).map((w) => new Promise((r) => w.once('exit', r)));
      for (const w of Object.values(cluster.workers)) w.send({ type: ASK, what: 'shutdown', id: 0 });
      await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, config.shutdownTimeoutMs + 3000).unref())]);
      if (admin) {
        admin.closeAllConnections();
        await new Promise((r) => admin.close(r));
      }
    },
  };
}

module.exports = { startCluster, runWorker };
