'use strict';

// --workers N: a primary process serves the admin port (metrics aggregated from every worker,
// sessions and health asked of each) and N worker processes share the GED-145 port through
// node:cluster. SIGTERM drains them all.
//
// One gateway, not N: every worker runs one configuration generation. A reload is prepared by
// every worker that is up and then applied by all of them, or by none, and reported as it went
// (gateway/ops/generations.js); a worker that was still starting (its warm-up), or that is started
// later, gets the running configuration when it says it is ready; settings that need a restart
// (config/restart.js: the wire numbering among them) stay as the gateway started, in a new
// worker too. A worker that does not answer the primary within ASK_TIMEOUT_MS is named on /health
// (status "degraded") and /status, and /metrics answers without it. Counters and histograms never
// go down when summed: a worker that exits leaves its last scraped values in the sum, and one that
// does not answer counts with its last ones.
//
// A rolling restart (SIGUSR2 to the primary, restartWorkers()) replaces the running code without
// a gap in routing: the primary keeps the listening socket, starts a new worker (the code on disk
// now, the running configuration), waits until it listens, then drains one old worker as SIGTERM
// drains a gateway, and so on, one at a time. A router whose session the drain closes reconnects
// at once to the same port and lands on a worker that is up. A new worker that fails to start
// stops the rolling restart; the old workers keep serving.
//
// A worker that fails while the gateway starts (a port in use, a certificate that does not load)
// fails the start: the primary stops the others and exits 1 with the worker's reason, once. A
// worker that dies later is started again at once, or, when workers keep dying young (within
// CRASH_WINDOW_MS of their start), after a delay that doubles up to MAX_RESTART_DELAY_MS.

const cluster = require('node:cluster');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { AggregatorRegistry, Registry } = require('prom-client');
const { Gateway } = require('../server');
const { restartNeeded: restartNeededOf, asRunning } = require('../config/restart');
const { Generations } = require('./generations');
const { Metrics } = require('./metrics');
const warmup = require('./warmup');
const { startTracing } = require('./telemetry');
const { startAdmin } = require('./admin');
const { RecentLines, ProcessStatus, mergeStatus } = require('./status');
const { createLogger, applyLogSettings, closeLogger } = require('../../lib/logger');
const { compileConfig } = require('../config');
const { guardProcess } = require('./process-guard');

const { OperatorError, listenError } = require('../../lib/errors');

const ASK = 'ged145:ask';
const READY = 'ged145:ready';
const ANSWER = 'ged145:answer';
const FAILED = 'ged145:failed';
const CRASH_WINDOW_MS = 10_000;
const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;
const ASK_TIMEOUT_MS = 2000;
/** Metric types whose value only grows: what a worker that exits leaves behind. */
const CUMULATIVE = new Set(['counter', 'histogram']);

/** Worker side: a gateway without its own admin port; answers the primary's questions. */
async function runWorker(config) {
  const log = createLogger({ component: `gateway[${process.pid}]`, ...config.log });
  guardProcess(log); // a handler's escaped error costs its route a log line, never this worker
  const metrics = new Metrics();
  const gateway = new Gateway(config, { log, metrics });
  if (config.warmup) warmup.register(gateway);
  const tracing = startTracing(gateway, config, { log }); // each worker exports its own spans; null when off
  const shutdown = (reason) => gateway.shutdown(reason).then(() => tracing && tracing.stop());
  let port;
  try {
    port = await gateway.listen({ fd: process.env.GED145_LISTEN_FD ? Number(process.env.GED145_LISTEN_FD) : null });
  } catch (err) {
    throw listenError(err, config.host, config.port);
  }
  // The generation this worker was started with: the primary sends the running one if it is newer.
  const reloads = new WorkerReloads(gateway, log, Number(process.env.GED145_WORKER_GENERATION || 0));
  process.send({
    type: READY, port, generation: reloads.generation, version: require('../../package.json').version,
  });
  process.on('message', (msg) => {
    if (msg && msg.type === ASK && RELOAD_STEPS.has(msg.what)) {
      const data = reloads[msg.what](msg);
      if (msg.id !== 0) process.send({ type: ANSWER, id: msg.id, data });
      return;
    }
    if (msg && msg.type === ASK && msg.what === 'metrics') {
      metrics.registry.getMetricsAsJSON().then((data) => process.send({ type: ANSWER, id: msg.id, data }));
    } else if (msg && msg.type === ASK && msg.what === 'health') {
      process.send({ type: ANSWER, id: msg.id, data: { pid: process.pid, backend: gateway.resolver.toJSON() } });
    } else if (msg && msg.type === ASK && msg.what === 'status') {
      gateway.status().then((data) => process.send({ type: ANSWER, id: msg.id, data }));
    } else if (msg && msg.type === ASK && msg.what === 'sessions') {
      process.send({ type: ANSWER, id: msg.id, data: gateway.toJSON().map((s) => ({ ...s, pid: process.pid })) });
    } else if (msg && msg.type === ASK && msg.what === 'shutdown') {
      shutdown('primary asked').then(() => closeLogger(log)).then(() => process.exit(0));
    }
  });
  // The log file keeps the last lines (the stop, the connection summaries written at it).
  const stop = () => shutdown('signal').then(() => closeLogger(log)).then(() => process.exit(0));
  process.once('SIGTERM', stop);
}

/** A hash of what the entry files of the settings' handler modules hold now (what they require is not looked at). */
function handlerFiles(settings) {
  const hash = crypto.createHash('sha256');
  for (const route of Object.values(settings.routes || {})) {
    if (typeof route.module !== 'string') continue;
    try {
      hash.update(fs.readFileSync(path.resolve(settings.baseDir, route.module)));
    } catch (err) {
      hash.update(`unreadable: ${err.code}`);
    }
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The reload messages a worker answers (gateway/ops/generations.js has the primary's side). */
const RELOAD_STEPS = new Set(['prepare', 'commit', 'abort', 'reload']);

/** A worker's side of a reload: the generation it runs, and the one it has compiled and keeps aside. */
class WorkerReloads {
  constructor(gateway, log, generation) {
    this.gateway = gateway;
    this.log = log;
    this.generation = generation;
    this.prepared = null; // {generation, config}
  }

  compile(msg) {
    return compileConfig(msg.settings, { baseDir: msg.settings.baseDir, env: process.env, fresh: true });
  }

  /** A prepare that fails is asked again by the primary, which says how the reload ends: a warning here. */
  refused(msg, err, level = 'error') {
    this.log[level](`reload refused (generation ${msg.generation}), generation ${this.generation} stays in force here: ${err.message}`);
    return { ok: false, error: err.message };
  }

  /**
   * Compiles a generation's settings (handler modules read afresh) and keeps them until commit or
   * abort; answers with a hash of the handler files, read before and after they were loaded, so
   * that the primary knows every worker loaded the same ones (gateway/ops/generations.js).
   */
  prepare(msg) {
    this.prepared = null;
    try {
      const before = handlerFiles(msg.settings);
      const config = this.compile(msg);
      const handlers = handlerFiles(msg.settings);
      if (handlers !== before) throw new Error('a handler file changed while it was loaded (was it being written?)');
      this.prepared = { generation: msg.generation, config };
      return { ok: true, handlers };
    } catch (err) {
      return this.refused(msg, err, 'warn');
    }
  }

  commit(msg) {
    const p = this.prepared;
    this.prepared = null;
    if (p === null || p.generation !== msg.generation) return { ok: false, error: `generation ${msg.generation} was not prepared here` };
    return this.apply(msg, p.config);
  }

  abort() {
    this.prepared = null;
    return { ok: true };
  }

  /** Both steps at once: a worker brought to the running generation (it started on an older one). */
  reload(msg) {
    try {
      return this.apply(msg, this.compile(msg));
    } catch (err) {
      return this.refused(msg, err);
    }
  }

  apply(msg, config) {
    try {
      this.gateway.reload(config);
    } catch (err) {
      return this.refused(msg, err);
    }
    this.generation = msg.generation;
    return { ok: true, generation: this.generation };
  }
}

async function startCluster(config, { log, listenFd = null } = {}) {
  const logger = log || createLogger({ component: 'gateway', ...config.log });
  let nextId = 1;
  let draining = false;
  const silent = new Set(); // pids of workers that did not answer the last question, for the log
  /** Asks worker w; resolves with its answer, or undefined when it did not answer within timeoutMs. */
  const askOne = (w, what, payload = {}, timeoutMs = ASK_TIMEOUT_MS) => new Promise((resolve) => {
    const id = nextId++;
    let timer = null;
    const onMessage = (msg) => {
      if (msg && msg.type === ANSWER && msg.id === id) {
        w.off('message', onMessage);
        clearTimeout(timer);
        resolve(msg.data);
      }
    };
    w.on('message', onMessage);
    try {
      w.send({ ...payload, type: ASK, what, id });
    } catch {
      // a worker that is exiting: no answer
    }
    timer = setTimeout(() => {
      w.off('message', onMessage);
      resolve(undefined);
    }, timeoutMs);
    timer.unref();
  });
  /** Tells worker w something that wants no answer (id 0). */
  const tell = (w, what, payload = {}) => {
    try {
      w.send({ ...payload, type: ASK, what, id: 0 });
    } catch {
      // a worker that is exiting
    }
  };
  /** Asks every worker; resolves [{worker, data}], data undefined for one that did not answer within ASK_TIMEOUT_MS. */
  const ask = (what) => Promise.all(Object.values(cluster.workers).map(async (w) => {
    const data = await askOne(w, what);
    const { pid } = w.process;
    if (data !== undefined) silent.delete(pid);
    else if (!silent.has(pid) && !draining) {
      silent.add(pid);
      logger.warn(`worker ${pid} did not answer within ${ASK_TIMEOUT_MS / 1000} s (stopped, or its event loop blocked); /health says degraded until it does`);
    }
    return { worker: w, data };
  }));
  const noAnswer = (w) => ({ pid: w.process.pid, answering: false, error: `no answer within ${ASK_TIMEOUT_MS / 1000} s` });

  // Counters that never go down: each live worker's last scrape, and what the exited ones left.
  const lastScrape = new Map(); // worker id -> its metrics as JSON, from the last scrape it answered
  let retired = []; // the cumulative metrics of exited workers, summed into one list
  const retire = async (worker) => {
    const last = lastScrape.get(worker.id);
    lastScrape.delete(worker.id);
    if (last === undefined) return;
    const kept = last.filter((m) => CUMULATIVE.has(m.type));
    retired = await AggregatorRegistry.aggregate([retired, kept]).getMetricsAsJSON();
  };
  const clusterMetrics = async () => {
    const lists = [retired];
    for (const { worker, data } of await ask('metrics')) {
      if (data !== undefined) lastScrape.set(worker.id, data);
      const last = lastScrape.get(worker.id);
      if (data !== undefined) lists.push(data);
      else if (last !== undefined) lists.push(last.filter((m) => CUMULATIVE.has(m.type)));
    }
    return AggregatorRegistry.aggregate(lists).metrics();
  };

  cluster.setupPrimary({ exec: require.resolve('./worker'), args: [] });
  // The validated settings, as plain JSON; the worker compiles routes and reads the key itself.
  // The generation: how many reloads the running settings are (gateway/ops/generations.js).
  let running = config;
  const env = { GED145_WORKER_CONFIG: JSON.stringify(config), GED145_WORKER_GENERATION: '0' };
  // Socket activation: the primary holds the service manager's socket; a worker listening on its
  // fd number gets a share of it through node:cluster, as with a port.
  if (listenFd !== null) env.GED145_LISTEN_FD = String(listenFd);
  const generations = new Generations({
    ask: askOne,
    tell,
    log: logger,
    settings: JSON.parse(JSON.stringify(config)),
    onCommit: (settings, generation) => {
      running = settings;
      env.GED145_WORKER_CONFIG = JSON.stringify(settings); // a worker started later starts with it
      env.GED145_WORKER_GENERATION = String(generation);
    },
  });
  cluster.on('message', (worker, msg) => {
    if (msg && msg.type === READY) generations.up(worker, msg.generation);
  });
  const startedAt = new Map(); // worker id -> when it was forked
  const retiring = new Set(); // ids of workers a rolling restart drains: their exit is no crash
  const trial = new Map(); // id of a rolling restart's new worker -> reject(), until it listens
  const fork = () => {
    const worker = cluster.fork(env);
    startedAt.set(worker.id, Date.now());
    // cluster's primary writes to a worker over IPC on its own (a failed shared listen goes to every
    // waiting worker); when that worker was already gone the write fails with EPIPE and, with no
    // listener, the error would take the primary down. Its 'exit' handler below deals with the loss.
    worker.on('error', (err) => {
      if (!draining && err.code !== 'EPIPE' && err.code !== 'ERR_IPC_CHANNEL_CLOSED') logger.warn(`worker ${worker.process.pid}: ${err.message}`);
    });
    return worker;
  };
  let starting = true;
  let failure = null; // why the start failed: the first worker's reason
  const failedStart = [];
  const reasons = new Map(); // worker id -> the reason it sent before exiting
  let crashes = 0; // workers in a row that died young
  let restartTimer = null;
  for (let i = 0; i < config.workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    generations.exited(worker);
    retire(worker).catch((err) => logger.warn(`worker ${worker.process.pid}: its last metrics could not be kept: ${err.message}`));
    silent.delete(worker.process.pid);
    if (draining) return;
    if (retiring.delete(worker.id)) return; // drained by a rolling restart, its successor already up
    if (trial.has(worker.id)) {
      trial.get(worker.id)(reasons.get(worker.id) || `exited (${signal || code})`);
      return; // a new worker that did not start: the old one it was to replace keeps serving
    }
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

  let rolling = null; // the rolling restart under way
  const rollingRestart = async () => {
    const old = Object.values(cluster.workers).filter((w) => !retiring.has(w.id));
    const t0 = Date.now();
    logger.info(`rolling restart: replacing ${old.length} workers one at a time; the listening socket stays open`);
    let version = null;
    for (const [i, w] of old.entries()) {
      if (draining) return;
      const fresh = fork();
      try {
        version = await new Promise((resolve, reject) => {
          trial.set(fresh.id, (why) => reject(new Error(why)));
          const onMessage = (msg) => {
            if (msg && msg.type === READY) {
              fresh.off('message', onMessage);
              resolve(msg.version);
            }
          };
          fresh.on('message', onMessage);
        });
      } catch (err) {
        logger.error(`rolling restart stopped: a new worker did not start: ${err.message}; ${old.length - i} workers of the old code keep serving`);
        return;
      } finally {
        trial.delete(fresh.id);
      }
      retiring.add(w.id);
      const exited = new Promise((r) => { w.once('exit', r); });
      try {
        w.send({ type: ASK, what: 'shutdown', id: 0 });
      } catch {
        // gone already
      }
      const bound = running.shutdownTimeoutMs + running.deadlineMs + running.limits.closeLingerMs + 5000;
      await Promise.race([exited, new Promise((r) => { setTimeout(r, bound).unref(); })]);
      if (!w.isDead()) w.kill('SIGKILL');
      logger.info(`rolling restart: worker ${fresh.process.pid} (version ${version}) took over from worker ${w.process.pid}`);
    }
    logger.info(`rolling restart done: ${old.length} workers replaced in ${((Date.now() - t0) / 1000).toFixed(1)} s, version ${version}`);
  };

  const recent = new RecentLines();
  logger.add(recent);
  const processStatus = new ProcessStatus();
  const status = async () => {
    const answers = await ask('status');
    const merged = mergeStatus({
      processes: [{ role: 'primary', ...processStatus.toJSON() }],
      config: {
        file: config.configFile || null,
        lastReload: generations.lastReload,
        workers: config.workers,
        generation: generations.generation,
        // Which worker runs which generation: a split is seen here, and on /health as "degraded".
        generations: generations.toJSON(),
      },
      listener: { host: running.host, port, tls: running.tls.cert !== null, deadlineMs: running.deadlineMs },
      warnings: recent.lines,
      connectionWarnings: recent.connectionLines,
    }, answers.filter((a) => a.data && a.data.processes).map((a) => a.data));
    // A worker that did not answer is named: a row of its own, no figures.
    for (const a of answers) if (a.data === undefined) merged.processes.push({ role: 'gateway', ...noAnswer(a.worker) });
    const byPid = new Map(generations.toJSON().map((g) => [g.pid, g.generation]));
    for (const p of merged.processes) if (byPid.has(p.pid)) p.generation = byPid.get(p.pid);
    return merged;
  };
  const admin = await startAdmin(config.admin, logger, {
    status,
    health: async () => {
      const byPid = new Map(generations.toJSON().map((g) => [g.pid, g.generation]));
      const workers = (await ask('health')).map((a) => (a.data === undefined ? noAnswer(a.worker) : { ...a.data, generation: byPid.get(a.data.pid) }));
      const degraded = workers.some((w) => w.answering === false) || !generations.converged;
      return {
        status: degraded ? 'degraded' : 'ok', generation: generations.generation, workers,
      };
    },
    notReady: () => (draining ? 'draining' : null),
    sessions: async () => (await ask('sessions')).flatMap((a) => (a.data === undefined ? [] : a.data)),
    metrics: clusterMetrics,
    contentType: Registry.PROMETHEUS_CONTENT_TYPE,
  });
  return {
    port,
    adminPort: admin === null ? null : admin.port,
    /**
     * SIGHUP: the primary validated the new settings; every worker compiles them, then applies
     * them, or none does (gateway/ops/generations.js). What needs a restart keeps the values the
     * gateway started with, in workers started later too. Resolves with lastReload.
     */
    async reload(next) {
      const restartNeeded = restartNeededOf(config, next);
      const settings = JSON.parse(JSON.stringify(asRunning(config, next, restartNeeded)));
      logger.info(`reload: generation ${generations.generation + 1} sent to ${generations.size} workers`);
      const outcome = await generations.reload(settings, restartNeeded);
      if (outcome.ok) applyLogSettings(logger, settings.log);
      return outcome;
    },
    reloadRefused(message) {
      generations.refused(message);
    },
    /** SIGUSR2: a rolling restart (see the top of this file); resolves once it is over or stopped. */
    async restartWorkers() {
      if (rolling !== null) {
        logger.warn('rolling restart asked for while one is under way: it goes on');
        return rolling;
      }
      rolling = rollingRestart().finally(() => { rolling = null; });
      return rolling;
    },
    async stop() {
      draining = true;
      generations.close();
      for (const reject of trial.values()) reject('the gateway is stopping');
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
