'use strict';

// --workers N: a primary process serves the admin port (metrics aggregated from every worker,
// sessions and health asked of each) and N worker processes share the GED-145 port through
// node:cluster. SIGTERM drains them all. ClusterPrimary has the runtime shape of one process
// (gateway/ops/runtime.js); its workers start as one process does (gateway/ops/cluster-worker.js)
// and talk to it in the messages of gateway/ops/ipc.js, which it dispatches through FROM_WORKER.
//
// One gateway, not N: every worker runs one configuration generation. A reload is prepared by
// every worker that is up and then applied by all of them, or by none, and reported as it went
// (gateway/ops/generations.js). Handler modules are read once, by the primary: every worker
// compiles the text it sends, never the file, so that a file rewritten during a reload cannot
// split the workers; a worker that was still starting (its warm-up), or that is started
// later, gets the running configuration (handler text included) when it starts and is ready; settings that need a restart
// (config/restart.js: the wire numbering among them) stay as the gateway started, in a new
// worker too. A worker that does not answer the primary within ASK_TIMEOUT_MS is named on /health
// (status "degraded") and /status, and /metrics answers without it (ops/cluster-metrics.js).
//
// A rolling restart (SIGUSR2 to the primary, restart()) replaces the running code without
// a gap in routing: the primary keeps the listening socket, starts a new worker (the code on disk
// now, the running configuration), waits until it listens, then drains one old worker as SIGTERM
// drains a gateway, and so on, one at a time. A router whose session the drain closes reconnects
// at once to the same port and lands on a worker that is up. A new worker that fails to start
// stops the rolling restart; the old workers keep serving.
//
// The figures (metrics, half hours, objectives) of a worker that leaves stay in the sums: a worker
// that drains (a rolling restart, SIGTERM, the primary's shutdown) hands its last ones over before
// it exits (FIGURES); the primary also pulls every worker's every 5 s, so that one that is killed
// or crashes loses at most what it counted in that time, counted in ged145_worker_figures_lost_total
// (gateway/ops/cluster-figures.js).
//
// A worker that fails while the gateway starts (a port in use, a certificate that does not load)
// fails the start: the primary stops the others and exits 1 with the worker's reason, once. A
// worker that dies later is started again at once, or, when workers keep dying young (within
// CRASH_WINDOW_MS of their start), after a delay that doubles up to MAX_RESTART_DELAY_MS.

const cluster = require('node:cluster');
const { Registry } = require('prom-client');
const { holdRestartSettings } = require('../config/restart');
const { Generations } = require('./generations');
const { Runtime } = require('./runtime');
const { WorkerFigures } = require('./cluster-figures');
const {
  START, READY, ANSWER, FAILED, FIGURES, ASK_TIMEOUT_MS, Questions, handlerSources,
} = require('./ipc');
const { RecentLines, ProcessStatus, mergeStatus } = require('./status');
const { createLogger, applyLogSettings } = require('../../lib/logger');
const { OperatorError } = require('../../lib/errors');

const CRASH_WINDOW_MS = 10_000;
const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms).unref(); });
const json = (value) => JSON.parse(JSON.stringify(value));

/** What a worker's message does at the primary, by its type: handler(primary, worker, msg). Others are ignored. */
const FROM_WORKER = {
  [READY]: (p, worker, msg) => p.workerReady(worker, msg),
  [ANSWER]: (p, worker, msg) => p.questions.answered(worker, msg),
  [FAILED]: (p, worker, msg) => { p.reasons.set(worker.id, msg.message); },
  [FIGURES]: (p, worker, msg) => p.figures.handedOver(worker, msg),
};

class ClusterPrimary extends Runtime {
  constructor(config, { log, listenFd = null } = {}) {
    super(config, { log: log || createLogger({ component: 'gateway', ...config.log }), listenFd });
    this.port = config.port;
    this.questions = new Questions();
    this.silent = new Set(); // pids of workers that did not answer the last question, for the log
    // The workers' metrics, half-hour views and objectives summed, those of workers that left kept.
    this.figures = new WorkerFigures({ ask: (w, what) => this.questions.ask(w, what), log: this.log, settings: json(config) });
    this.startSettings = json(config); // the validated settings, as plain JSON: what a worker compiles
    this.running = config; // the settings in force (a rolling restart's drain bound reads them)
    // What a worker started now compiles (START): the running generation (how many reloads the
    // running settings are, gateway/ops/generations.js), its settings, and its handler modules' text.
    this.generationStart = { settings: json(config), generation: 0, sources: handlerSources(config) };
    this.env = {};
    // Socket activation: the primary holds the service manager's socket; a worker listening on its
    // fd number gets a share of it through node:cluster, as with a port.
    if (listenFd !== null) this.env.GED145_LISTEN_FD = String(listenFd);
    this.generations = new Generations({
      ask: (w, what, payload, timeoutMs) => this.questions.ask(w, what, payload, timeoutMs),
      tell: (w, what, payload) => this.questions.tell(w, what, payload),
      log: this.log,
      settings: json(config),
      sources: this.generationStart.sources,
      onCommit: (settings, generation, sources) => this.committed(settings, generation, sources),
    });
    this.startedAt = new Map(); // worker id -> when it was forked
    this.reasons = new Map(); // worker id -> the reason it sent before exiting
    this.retiring = new Set(); // ids of workers a rolling restart drains: their exit is no crash
    this.trials = new Map(); // id of a rolling restart's new worker -> {resolve, reject}, until it listens
    this.starting = null; // while the gateway starts: {ready, resolve, reject}
    this.draining = false;
    this.crashes = 0; // workers in a row that died young
    this.restartTimer = null;
    this.rolling = null; // the rolling restart under way
    this.recent = new RecentLines();
    this.processStatus = null;
    // One listener each, from open() to close(): every message and exit of every worker.
    this.onMessage = (worker, msg) => {
      if (msg && Object.hasOwn(FROM_WORKER, msg.type)) FROM_WORKER[msg.type](this, worker, msg);
    };
    this.onExit = (worker, code, signal) => this.workerExited(worker, code, signal);
  }

  /** Forks config.workers workers; resolves when every one listens, rejects with the first one's reason it could not. */
  async open() {
    cluster.setupPrimary({ exec: require.resolve('./worker'), args: [] });
    cluster.on('message', this.onMessage);
    cluster.on('exit', this.onExit);
    const started = new Promise((resolve, reject) => { this.starting = { ready: 0, resolve, reject }; });
    for (let i = 0; i < this.config.workers; i++) this.fork();
    try {
      await started;
    } catch (err) {
      this.draining = true;
      const exits = Object.values(cluster.workers).map((w) => new Promise((r) => {
        w.once('exit', r);
        w.kill('SIGKILL');
      }));
      await Promise.all(exits); // none left behind when the primary exits
      this.unlisten();
      throw err;
    }
    this.starting = null;
    this.log.info(`${this.config.workers} workers listening for ICM routers on ${this.config.host}:${this.port}`);
    this.log.add(this.recent);
    this.processStatus = new ProcessStatus();
    this.figures.start(() => Object.values(cluster.workers));
  }

  unlisten() {
    cluster.off('message', this.onMessage);
    cluster.off('exit', this.onExit);
  }

  fork() {
    const worker = cluster.fork(this.env);
    worker.send({ type: START, ...this.generationStart }); // the first message it reads (gateway/ops/worker.js)
    this.startedAt.set(worker.id, Date.now());
    // cluster's primary writes to a worker over IPC on its own (a failed shared listen goes to every
    // waiting worker); when that worker was already gone the write fails with EPIPE and, with no
    // listener, the error would take the primary down. workerExited() deals with the loss.
    worker.on('error', (err) => {
      if (!this.draining && err.code !== 'EPIPE' && err.code !== 'ERR_IPC_CHANNEL_CLOSED') this.log.warn(`worker ${worker.process.pid}: ${err.message}`);
    });
    return worker;
  }

  /** READY: a worker's GED-145 listener is up (cluster's own 'listening' would fire for any server a worker opens). */
  workerReady(worker, msg) {
    this.generations.up(worker, msg.generation);
    this.figures.up(worker);
    this.port = msg.port; // with port 0 the workers share one port the primary picked
    const trial = this.trials.get(worker.id);
    if (trial !== undefined) trial.resolve(msg.version);
    if (this.starting !== null && ++this.starting.ready === this.config.workers) this.starting.resolve();
  }

  workerExited(worker, code, signal) {
    this.generations.exited(worker);
    this.figures.exited(worker, { quiet: this.draining });
    this.silent.delete(worker.process.pid);
    const reason = this.reasons.get(worker.id) || `exited (${signal || code})`;
    const lived = Date.now() - (this.startedAt.get(worker.id) || 0);
    this.reasons.delete(worker.id);
    this.startedAt.delete(worker.id);
    if (this.draining) return;
    if (this.retiring.delete(worker.id)) return; // drained by a rolling restart, its successor already up
    const trial = this.trials.get(worker.id);
    if (trial !== undefined) {
      trial.reject(new Error(reason));
      return; // a new worker that did not start: the old one it was to replace keeps serving
    }
    if (this.starting !== null) {
      this.starting.reject(new OperatorError(reason)); // the first reason; a promise settles once
      return;
    }
    this.crashes = lived < CRASH_WINDOW_MS ? this.crashes + 1 : 0;
    const delay = this.crashes <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, FIRST_RESTART_DELAY_MS * 2 ** (this.crashes - 2));
    this.log.error(`worker ${worker.process.pid} ${reason}; starting another${delay > 0 ? ` in ${delay / 1000} s (${this.crashes} died young in a row)` : ''}`);
    if (delay === 0) {
      this.fork();
      return;
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (!this.draining) this.fork();
    }, delay);
  }

  /** A generation is in force: a worker started from now on starts with it, its handler code included. */
  committed(settings, generation, sources) {
    this.running = settings;
    this.figures.configure(settings);
    this.generationStart = { settings, generation, sources };
  }

  /** Asks every worker; resolves [{worker, data}], data undefined for one that did not answer within ASK_TIMEOUT_MS. */
  askAll(what) {
    return Promise.all(Object.values(cluster.workers).map(async (w) => {
      const data = await this.questions.ask(w, what);
      const { pid } = w.process;
      if (data !== undefined) this.silent.delete(pid);
      else if (!this.silent.has(pid) && !this.draining) {
        this.silent.add(pid);
        this.log.warn(`worker ${pid} did not answer within ${ASK_TIMEOUT_MS / 1000} s (stopped, or its event loop blocked); `
          + '/health says degraded until it does');
      }
      return { worker: w, data };
    }));
  }

  /**
   * SIGHUP: the primary validated the new settings; every worker compiles them, then applies
   * them, or none does (gateway/ops/generations.js). What needs a restart keeps the values the
   * gateway started with, in workers started later too. Resolves with how it went.
   */
  async apply(next) {
    const settings = json(next);
    const restartNeeded = holdRestartSettings(this.startSettings, settings);
    this.log.info(`reload: generation ${this.generations.generation + 1} sent to ${this.generations.size} workers`);
    const outcome = await this.generations.reload(settings, restartNeeded, handlerSources(next));
    if (outcome.ok) applyLogSettings(this.log, settings.log);
    return outcome;
  }

  /** SIGUSR2: a rolling restart (see the top of this file); resolves once it is over or stopped. */
  restart() {
    if (this.rolling !== null) {
      this.log.warn('rolling restart asked for while one is under way: it goes on');
      return this.rolling;
    }
    this.rolling = this.rollingRestart().finally(() => { this.rolling = null; });
    return this.rolling;
  }

  async rollingRestart() {
    const old = Object.values(cluster.workers).filter((w) => !this.retiring.has(w.id));
    const t0 = Date.now();
    this.log.info(`rolling restart: replacing ${old.length} workers one at a time; the listening socket stays open`);
    let version = null;
    for (const [i, w] of old.entries()) {
      if (this.draining) return;
      const fresh = this.fork();
      try {
        version = await new Promise((resolve, reject) => { this.trials.set(fresh.id, { resolve, reject }); });
      } catch (err) {
        this.log.error(`rolling restart stopped: a new worker did not start: ${err.message}; ${old.length - i} workers of the old code keep serving`);
        return;
      } finally {
        this.trials.delete(fresh.id);
      }
      await this.drain(w);
      this.log.info(`rolling restart: worker ${fresh.process.pid} (version ${version}) took over from worker ${w.process.pid}`);
    }
    this.log.info(`rolling restart done: ${old.length} workers replaced in ${((Date.now() - t0) / 1000).toFixed(1)} s, version ${version}`);
  }

  /** Drains worker w as SIGTERM drains a gateway; one that takes longer than its settings allow is killed. */
  async drain(w) {
    this.retiring.add(w.id);
    const exited = new Promise((r) => { w.once('exit', r); });
    this.questions.tell(w, 'shutdown');
    const { running } = this;
    await Promise.race([exited, sleep(running.shutdownTimeoutMs + running.deadlineMs + running.limits.closeLingerMs + 5000)]);
    if (!w.isDead()) w.kill('SIGKILL');
  }

  /** /status: the workers' figures summed, the primary's own process, which worker runs which generation. */
  async status() {
    const answers = await this.askAll('status');
    const { running, generations } = this;
    const merged = mergeStatus({
      processes: [{ role: 'primary', ...this.processStatus.toJSON() }],
      config: {
        file: this.config.configFile || null,
        workers: this.config.workers,
        generation: generations.generation,
        // Which worker runs which generation: a split is seen here, and on /health as "degraded".
        generations: generations.toJSON(),
      },
      listener: {
        host: running.host, port: this.port, tls: running.tls.cert !== null, deadlineMs: running.deadlineMs,
      },
      warnings: this.recent.lines,
      connectionWarnings: this.recent.connectionLines,
    }, answers.filter((a) => a.data && a.data.processes).map((a) => a.data));
    // A worker that did not answer is named: a row of its own, no figures.
    for (const a of answers) if (a.data === undefined) merged.processes.push({ role: 'gateway', ...noAnswer(a.worker) });
    const byPid = this.generationsByPid();
    for (const p of merged.processes) if (byPid.has(p.pid)) p.generation = byPid.get(p.pid);
    return { ...merged, ...this.figures.reports.merge(answers) };
  }

  async reports() {
    return this.figures.reports.merge(await this.askAll('reports'));
  }

  generationsByPid() {
    return new Map(this.generations.toJSON().map((g) => [g.pid, g.generation]));
  }

  async health() {
    const byPid = this.generationsByPid();
    const workers = (await this.askAll('health')).map((a) => (a.data === undefined ? noAnswer(a.worker) : { ...a.data, generation: byPid.get(a.data.pid) }));
    const degraded = workers.some((w) => w.answering === false) || !this.generations.converged;
    return { status: degraded ? 'degraded' : 'ok', generation: this.generations.generation, workers };
  }

  notReady() {
    return this.draining ? 'draining' : null;
  }

  async sessions() {
    return (await this.askAll('sessions')).flatMap((a) => (a.data === undefined ? [] : a.data));
  }

  async metrics() {
    return this.figures.metrics.text(await this.askAll('metrics'));
  }

  get contentType() {
    return Registry.PROMETHEUS_CONTENT_TYPE;
  }

  /** Every worker drains (as SIGTERM drains one gateway), for at most shutdownTimeoutMs and a little. */
  async close() {
    this.draining = true;
    this.generations.close();
    this.figures.stop();
    for (const trial of this.trials.values()) trial.reject(new Error('the gateway is stopping'));
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    const exits = Object.values(cluster.workers).map((w) => new Promise((r) => w.once('exit', r)));
    for (const w of Object.values(cluster.workers)) this.questions.tell(w, 'shutdown');
    await Promise.race([Promise.all(exits), sleep(this.config.shutdownTimeoutMs + 3000)]);
    if (this.processStatus !== null) this.processStatus.close();
    this.unlisten();
  }
}

const noAnswer = (w) => ({ pid: w.process.pid, answering: false, error: `no answer within ${ASK_TIMEOUT_MS / 1000} s` });

/** startCluster(config, {log, listenFd}): a started ClusterPrimary. */
function startCluster(config, options) {
  return new ClusterPrimary(config, options).start();
}

module.exports = { startCluster, ClusterPrimary, FROM_WORKER };
