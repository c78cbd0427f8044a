'use strict';

// --workers N: a primary process serves the admin port (metrics aggregated from every worker,
// sessions and health asked of each) and N worker processes share the GED-145 port through
// node:cluster. SIGTERM drains them all.
//
// A worker that fails while the gateway starts (a port in use, a certificate that does not load)
// fails the start: the primary stops the others and exits 1 with the worker's reason, once. A
// worker that dies later is started again at once, or, when workers keep dying young (within
// CRASH_WINDOW_MS of their start), after a delay that doubles up to MAX_RESTART_DELAY_MS.

const cluster = require('node:cluster');
const { AggregatorRegistry } = require('prom-client');
const { Gateway } = require('../server');
const { Metrics } = require('./metrics');
const { startAdmin } = require('./admin');
const { RecentLines, ProcessStatus, mergeStatus } = require('./status');
const { createLogger } = require('../../lib/logger');
const { compileConfig } = require('../config');

const { OperatorError, listenError } = require('../../lib/errors');

const ASK = 'ged145:ask';
const READY = 'ged145:ready';
const ANSWER = 'ged145:answer';
const FAILED = 'ged145:failed';
const CRASH_WINDOW_MS = 10_000;
const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;

/** Worker side: a gateway without its own admin port; answers the primary's questions. */
async function runWorker(config) {
  const log = createLogger({ component: `gateway[${process.pid}]`, ...config.log });
  const metrics = new Metrics();
  AggregatorRegistry.setRegistries([metrics.registry]);
  new AggregatorRegistry(); // installs the worker's answer to the primary's metrics requests
  const gateway = new Gateway(config, { log, metrics });
  let port;
  try {
    port = await gateway.listen();
  } catch (err) {
    throw listenError(err, config.host, config.port);
  }
  process.send({ type: READY, port });
  process.on('message', (msg) => {
    if (msg && msg.type === ASK && msg.what === 'health') {
      process.send({ type: ANSWER, id: msg.id, data: { pid: process.pid, backend: gateway.resolver.toJSON() } });
    } else if (msg && msg.type === ASK && msg.what === 'status') {
      gateway.status().then((data) => process.send({ type: ANSWER, id: msg.id, data }));
    } else if (msg && msg.type === ASK && msg.what === 'sessions') {
      process.send({ type: ANSWER, id: msg.id, data: gateway.toJSON().map((s) => ({ ...s, pid: process.pid })) });
    } else if (msg && msg.type === ASK && msg.what === 'reload') {
      try {
        const next = compileConfig(msg.settings, { baseDir: msg.settings.baseDir, env: process.env, fresh: true });
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
  const startedAt = new Map(); // worker id -> when it was forked
  const fork = () => {
    const worker = cluster.fork(env);
    startedAt.set(worker.id, Date.now());
    // cluster's primary writes to a worker over IPC on its own (a failed shared listen goes to every
    // waiting worker); when that worker was already gone the write fails with EPIPE and, with no
    // listener, the error would take the primary down. Its 'exit' handler below deals with the loss.
    worker.on('error', (err) => {
      if (!draining && err.code !== 'EPIPE' && err.code !== 'ERR_IPC_CHANNEL_CLOSED') logger.warn(`worker ${worker.process.pid}: ${err.message}`);
    });
  };
  let starting = true;
  let failure = null; // why the start failed: the first worker's reason
  const failedStart = [];
  const reasons = new Map(); // worker id -> the reason it sent before exiting
  let crashes = 0; // workers in a row that died young
  let restartTimer = null;
  for (let i = 0; i < config.workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (draining) return;
    const reason = reasons.get(worker.id) || `exited (${signal || code})`;
    if (starting) {
      if (failure === null) failure = reason;
      for (const f of failedStart.splice(0)) f();
      return;
    }
    const lived = Date.now() - (startedAt.get(worker.id) || 0);
    crashes = lived < CRASH_WINDOW_MS ? crashes + 1 : 0;
    const delay = crashes <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, FIRST_RESTART_DELAY_MS * 2 ** (crashes - 2));
    logger.error(`worker ${worker.process.pid} ${reason}; starting another${delay > 0 ? ` in ${delay / 1000} s (${crashes} died young in a row)` : ''}`);
    if (delay === 0) fork();
    else restartTimer = setTimeout(() => { restartTimer = null; if (!draining) fork(); }, delay);
  });
  let port = config.port;
  try {
    await new Promise((resolve, reject) => {
      let ready = 0;
      failedStart.push(() => reject(new OperatorError(failure)));
      // Each worker says when its GED-145 listener is up (cluster's own 'listening' event would
      // also fire for any other server a worker opens), or why it could not start.
      cluster.on('message', (worker, msg) => {
        if (msg && msg.type === FAILED) reasons.set(worker.id, msg.message);
        if (!msg || msg.type !== READY) return;
        port = msg.port; // with port 0 the workers share one port the primary picked
        ready++;
        if (ready === config.workers) resolve();
      });
    });
  } catch (err) {
    draining = true;
    const exits = Object.values(cluster.workers).map((w) => new Promise((r) => {
      w.once('exit', r);
      w.kill('SIGKILL');
    }));
    await Promise.all(exits); // none left behind when the primary exits
    throw err;
  }
  starting = false;
  logger.info(`${config.workers} workers listening for ICM routers on ${config.host}:${port}`);

  const recent = new RecentLines();
  logger.add(recent);
  const processStatus = new ProcessStatus();
  let lastReload = null;
  const status = async () => mergeStatus({
    processes: [{ role: 'primary', ...processStatus.toJSON() }],
    config: { file: config.configFile || null, lastReload, workers: config.workers },
    listener: { host: config.host, port, tls: config.tls.cert !== null, deadlineMs: config.deadlineMs },
    warnings: recent.lines,
  }, (await ask('status')).filter((w) => w && w.processes));
  const admin = await startAdmin(config.admin, logger, {
    status,
    health: async () => ({ workers: await ask('health') }),
    notReady: () => (draining ? 'draining' : null),
    sessions: async () => (await ask('sessions')).flat(),
    metrics: () => aggregator.clusterMetrics(),
    contentType: aggregator.contentType,
  });
  return {
    port,
    adminPort: admin === null ? null : admin.port,
    /** SIGHUP: the primary validated the new settings; each worker compiles and applies them. */
    reload(next) {
      env.GED145_WORKER_CONFIG = JSON.stringify(next); // a worker started later starts with it too
      for (const w of Object.values(cluster.workers)) w.send({ type: ASK, what: 'reload', id: 0, settings: JSON.parse(JSON.stringify(next)) });
      logger.info(`configuration sent to ${Object.keys(cluster.workers).length} workers`);
      lastReload = { at: new Date().toISOString(), ok: true, restartNeeded: [] };
    },
    reloadRefused(message) {
      lastReload = { at: new Date().toISOString(), ok: false, error: message };
    },
    async stop() {
      draining = true;
      if (restartTimer !== null) clearTimeout(restartTimer);
      const exits = Object.values(cluster.workers).map((w) => new Promise((r) => w.once('exit', r)));
      for (const w of Object.values(cluster.workers)) w.send({ type: ASK, what: 'shutdown', id: 0 });
      await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, config.shutdownTimeoutMs + 3000).unref())]);
      if (admin !== null) await admin.close();
      processStatus.close();
    },
  };
}

module.exports = { startCluster, runWorker, FAILED };
