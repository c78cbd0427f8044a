'use strict';

// A cluster worker (gateway/ops/worker.js is its entry point): a gateway started through the same
// sequence as one process (openGateway, gateway/index.js), without an admin port of its own; it
// answers the primary's questions (gateway/ops/ipc.js) through one handler table, QUESTIONS.

const { openGateway } = require('../index');
const { compile } = require('../config');
const { createLogger, closeLogger } = require('../../lib/logger');
const { guardProcess } = require('./process-guard');
const {
  ASK, READY, ANSWER, FIGURES, handlerSources, sourcesPrint,
} = require('./ipc');

/** A worker's side of a reload: the generation it runs, and the one it has compiled and keeps aside. */
class WorkerReloads {
  constructor(gateway, log, generation) {
    this.gateway = gateway;
    this.log = log;
    this.generation = generation;
    this.prepared = null; // {generation, config}
  }

  /** A generation's settings compiled, its handler modules from the text the primary read (msg.sources). */
  compile(msg) {
    return compile(msg.settings, {
      baseDir: msg.settings.baseDir, env: process.env, fresh: true, sources: msg.sources || {},
    });
  }

  /** A prepare that fails fails the reload, which the primary reports with this reason: a warning here. */
  refused(msg, err, level = 'error') {
    this.log[level](`reload refused (generation ${msg.generation}), generation ${this.generation} stays in force here: ${err.message}`);
    return { ok: false, error: err.message };
  }

  /**
   * Compiles a generation's settings and keeps them until commit or abort; answers with a hash of
   * the handler code it compiled, so that the primary knows every worker will run the code it
   * read (gateway/ops/generations.js).
   */
  prepare(msg) {
    this.prepared = null;
    try {
      const config = this.compile(msg);
      this.prepared = { generation: msg.generation, config };
      return { ok: true, handlers: sourcesPrint(handlerSources(config)) };
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

/**
 * What a worker answers, by the question's `what`: handler(worker, msg) returns the answer (or a
 * promise of it); undefined sends none. A `what` not in the table is not answered (the primary's
 * question times out, as for a worker that is stuck).
 */
const QUESTIONS = {
  metrics: (w) => w.opened.metrics.registry.getMetricsAsJSON(),
  health: (w) => ({ pid: process.pid, backend: w.gateway.backend.toJSON() }),
  status: (w) => w.opened.status(),
  reports: (w) => w.opened.reports.toJSON(),
  figures: (w) => w.figures(),
  sessions: (w) => w.gateway.toJSON().map((s) => ({ ...s, pid: process.pid })),
  shutdown: (w) => { w.stop('primary asked'); },
  prepare: (w, msg) => w.reloads.prepare(msg),
  commit: (w, msg) => w.reloads.commit(msg),
  abort: (w, msg) => w.reloads.abort(msg),
  reload: (w, msg) => w.reloads.reload(msg),
};

/** The worker process: its gateway, its reloads, and the table it answers the primary from. */
class Worker {
  constructor(opened, log, generation, { send = (m, done) => process.send(m, done), exit = (code) => process.exit(code) } = {}) {
    const { gateway, close } = opened;
    this.opened = opened; // its metrics and status too (ops/attach.js)
    this.gateway = gateway;
    this.close = close; // drains the gateway, then exports its last spans
    this.log = log;
    this.reloads = new WorkerReloads(gateway, log, generation);
    this.send = send;
    this.exit = exit;
    this.stopping = null;
  }

  /** One message from the primary, dispatched through QUESTIONS. */
  async onMessage(msg) {
    if (!msg || msg.type !== ASK || !Object.hasOwn(QUESTIONS, msg.what)) return;
    const data = await QUESTIONS[msg.what](this, msg);
    if (msg.id !== 0 && data !== undefined) this.send({ type: ANSWER, id: msg.id, data });
  }

  /** What the primary keeps of this worker: its metrics and its reports, the objectives' counts by minute included. */
  async figures() {
    return { metrics: await this.opened.metrics.registry.getMetricsAsJSON(), reports: this.opened.reports.export() };
  }

  /**
   * The figures once the gateway has drained, sent before the worker exits, so that the primary
   * keeps every query this worker counted; resolves once they are written to the channel (or the
   * primary is gone).
   */
  async handOver() {
    const msg = { type: FIGURES, ...await this.figures() };
    return new Promise((resolve) => {
      try {
        this.send(msg, () => resolve());
      } catch {
        resolve(); // the primary is gone: nobody to keep them
      }
    });
  }

  /** The log file keeps the last lines (the stop, the connection summaries written at it). */
  stop(reason) {
    if (this.stopping === null) {
      this.stopping = this.close(reason)
        .then(() => this.handOver())
        .catch((err) => this.log.warn(`the last figures could not be handed to the primary: ${err.message}`))
        .then(() => closeLogger(this.log))
        .then(() => this.exit(0));
    }
    return this.stopping;
  }
}

/** Worker side: started as a single process starts, minus the admin port; says READY to the primary. */
async function runWorker(config, { listenFd = null, generation = 0 } = {}) {
  const log = createLogger({ component: `gateway[${process.pid}]`, ...config.log });
  guardProcess(log); // a handler's escaped error costs its route a log line, never this worker
  const opened = await openGateway(config, { log, listenFd }); // each worker exports its own spans
  // The generation this worker was started with: the primary sends the running one if it is newer.
  const worker = new Worker(opened, log, generation);
  process.send({
    type: READY, port: opened.gateway.port, generation, version: require('../../package.json').version,
  });
  process.on('message', (msg) => {
    worker.onMessage(msg).catch((err) => log.error(`answering the primary (${msg.what}): ${err.message}`));
  });
  process.once('SIGTERM', () => worker.stop('signal'));
  return worker;
}

module.exports = { runWorker, Worker, QUESTIONS };
