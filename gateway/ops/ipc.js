'use strict';

// What a cluster's primary (gateway/ops/cluster.js) and its workers (gateway/ops/cluster-worker.js)
// say to each other over node:cluster's IPC channel, and the primary's questions waiting for their
// answers.
//
// Primary -> a worker it has just started: START {settings, generation, sources}, the running
// generation it compiles (sources: the handler modules' text the primary read, so that a worker
// started later runs the same code as the others, whatever the files hold by then).
// Worker -> primary: READY {port, generation, version} (its GED-145 listener is up), FAILED
// {message} (it could not start; it exits next), ANSWER {id, data}, FIGURES {metrics, reports}
// (its last figures, once its gateway has drained, before it exits). Primary -> worker: ASK
// {what, id, ...}; id 0 wants no answer. The `what`s a worker answers are its handler table
// (QUESTIONS in cluster-worker.js).

const crypto = require('node:crypto');
const { ROUTE_KIND } = require('../route-kinds');

const START = 'ged145:start';
const ASK = 'ged145:ask';
const READY = 'ged145:ready';
const ANSWER = 'ged145:answer';
const FAILED = 'ged145:failed';
const FIGURES = 'ged145:figures';
const ASK_TIMEOUT_MS = 2000;

/** The primary's questions to its workers, each waiting for the ANSWER with its id, or its timeout. */
class Questions {
  constructor() {
    this.nextId = 1;
    this.pending = new Map(); // id -> {worker, resolve, timer}
  }

  /** Asks worker w; resolves with its answer, or undefined when it did not answer within timeoutMs. */
  ask(w, what, payload = {}, timeoutMs = ASK_TIMEOUT_MS) {
    return new Promise((resolve) => {
      const id = this.nextId++;
      const timer = setTimeout(() => this.settle(id, undefined), timeoutMs);
      timer.unref();
      this.pending.set(id, { worker: w, resolve, timer });
      try {
        w.send({ ...payload, type: ASK, what, id });
      } catch {
        // a worker that is exiting: no answer, its timeout settles it
      }
    });
  }

  /** Tells worker w something that wants no answer (id 0). */
  tell(w, what, payload = {}) {
    try {
      w.send({ ...payload, type: ASK, what, id: 0 });
    } catch {
      // a worker that is exiting
    }
  }

  /** An ANSWER came from worker w: the question it answers is settled (an answer from another worker is not taken). */
  answered(w, msg) {
    const p = this.pending.get(msg.id);
    if (p !== undefined && p.worker === w) this.settle(msg.id, msg.data);
  }

  settle(id, data) {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(data);
  }
}

/** {file: text} of the handler modules a compiled configuration loaded: what its workers compile. */
function handlerSources(config) {
  const sources = {};
  for (const route of config.compiledRoutes.values()) if (route.kind === ROUTE_KIND.MODULE) sources[route.file] = route.source;
  return sources;
}

/** A short hash of handler sources: the same for two processes that compiled the same code. */
function sourcesPrint(sources) {
  const hash = crypto.createHash('sha256');
  for (const file of Object.keys(sources).sort()) hash.update(file).update('\0').update(sources[file]).update('\0');
  return hash.digest('hex').slice(0, 16);
}

module.exports = {
  START, handlerSources, sourcesPrint,
  ASK, READY, ANSWER, FAILED, FIGURES, ASK_TIMEOUT_MS, Questions,
};
