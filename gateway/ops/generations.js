'use strict';

// The primary's bookkeeping of a reload with workers (gateway/ops/cluster.js): which
// configuration generation each worker runs, and a reload that is reported as it went.
//
// A reload is two phases, so that the workers never split over it:
//   prepare  every worker that is up compiles the new settings and the handler modules' text the
//            primary read once (never the files: one rewritten during the reload cannot give two
//            workers two versions), keeps them aside, and answers ok with a hash of the code it
//            compiled, or why not.
//   commit   once every worker has prepared the primary's code, each applies what it prepared; the
//            generation goes up. If one refuses (or compiled other code, or does not answer),
//            every worker drops what it prepared and keeps the running generation: the reload is
//            reported refused, naming the worker and its reason.
// The reload's outcome is `ok` only when every worker confirmed the new generation. A worker that
// starts later (a crash, a rolling restart), or did not confirm, is brought to the running
// generation when it is up (catchUp), and asked again with a growing delay while it refuses;
// meanwhile /status shows which worker runs which generation and /health says "degraded".

const PREPARE_TIMEOUT_MS = 10_000;
const COMMIT_TIMEOUT_MS = 2000;
const CATCH_UP_RETRY_MS = Object.freeze([1000, 2000, 5000, 10_000, 30_000]);

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms).unref(); });
const { sourcesPrint } = require('./ipc');

class Generations {
  /**
   * ask(worker, what, payload, timeoutMs): a promise of the worker's answer, undefined when it did
   * not answer in time; tell(worker, what, payload): a message that wants no answer.
   * onCommit(settings, generation, sources): a generation is in force (what a worker started now
   * gets); sources: the running generation's handler modules' text, {file: text}.
   */
  constructor({
    ask, tell, log, onCommit, settings, sources = {},
  }) {
    this.ask = ask;
    this.tell = tell;
    this.log = log;
    this.onCommit = onCommit;
    this.settings = settings; // the running generation's settings, as JSON
    this.sources = sources; // and its handler modules' text
    this.generation = 0;
    this.workers = new Map(); // worker -> {pid, generation, up, error, catchingUp}
    this.queue = Promise.resolve(); // one reload at a time, in the order the signals came
    this.closed = false;
  }

  /** A worker is up (its READY) and runs `generation`; an older one is brought forward. */
  up(worker, generation) {
    this.workers.set(worker, {
      pid: worker.process.pid, generation, up: true, error: null, catchingUp: false,
    });
    if (generation !== this.generation) this.catchUp(worker);
  }

  exited(worker) {
    this.workers.delete(worker);
  }

  /** Workers that are up. */
  get size() {
    return this.workers.size;
  }

  /**
   * Resolves with how it went ({at, ok, generation, handlers, restartNeeded | error}) once the
   * reload of `settings` (validated by the primary), with the handler text it read, is over.
   */
  reload(settings, restartNeeded, sources = {}) {
    const run = this.queue.then(() => this.run(settings, restartNeeded, sources));
    this.queue = run.catch(() => {});
    return run;
  }

  async run(settings, restartNeeded, sources) {
    const target = this.generation + 1;
    const workers = [...this.workers.keys()];
    const handlers = sourcesPrint(sources);
    const refusals = await this.prepareAll(workers, target, settings, sources, handlers);
    const at = new Date().toISOString();
    if (refusals.length > 0) {
      for (const w of workers) this.tell(w, 'abort', { generation: target });
      const named = refusals.map((r) => `worker ${r.pid}: ${r.error}`).join('; ');
      this.log.error(`reload refused by ${refusals.length} of ${workers.length} workers; every worker keeps generation ${this.generation}: ${named}`);
      return {
        at, ok: false, generation: this.generation, error: `refused by ${named}`, refusedBy: refusals,
      };
    }
    this.generation = target;
    this.settings = settings;
    this.sources = sources;
    this.onCommit(settings, target, sources);
    const unconfirmed = [];
    await Promise.all(workers.map(async (w) => {
      const a = await this.ask(w, 'commit', { generation: target }, COMMIT_TIMEOUT_MS);
      const s = this.workers.get(w);
      if (s === undefined) return; // exited: the one started in its place gets the generation
      if (a !== undefined && a.ok) s.generation = target;
      else unconfirmed.push({ pid: s.pid, error: a === undefined ? `no answer within ${COMMIT_TIMEOUT_MS / 1000} s` : a.error });
    }));
    // Workers that came up meanwhile, or did not confirm, get it as a late worker does.
    for (const [w, s] of this.workers) if (s.generation !== target) this.catchUp(w);
    let outcome = {
      at, ok: true, generation: target, handlers, restartNeeded,
    };
    if (unconfirmed.length > 0) {
      const named = unconfirmed.map((u) => `worker ${u.pid}: ${u.error}`).join('; ');
      this.log.error(`reload: generation ${target} is not confirmed by ${named}; it is sent again until it is (/status shows each worker's generation)`);
      outcome = {
        ...outcome, ok: false, error: `not confirmed by ${named}`, unconfirmed,
      };
    } else {
      this.log.info(`configuration generation ${target} applied by ${workers.length === 1 ? 'the worker' : `all ${workers.length} workers`}`);
    }
    if (restartNeeded.length > 0) this.log.warn(`reload: ${restartNeeded.join(', ')} changed and will apply only after a restart`);
    return outcome;
  }

  /**
   * Every worker prepares generation `target` from the settings and handler text given; resolves
   * with the refusals ([] when every worker prepared it): a worker that refused, compiled other
   * code than `handlers` says, or did not answer within PREPARE_TIMEOUT_MS.
   */
  async prepareAll(workers, target, settings, sources, handlers) {
    const answers = await Promise.all(workers.map(async (w) => {
      if (!this.workers.has(w)) return null; // exited: the one started in its place gets the generation
      const a = await this.ask(w, 'prepare', { generation: target, settings, sources }, PREPARE_TIMEOUT_MS);
      return { pid: w.process.pid, answer: a };
    }));
    const refusals = [];
    for (const r of answers) {
      if (r === null) continue;
      if (r.answer === undefined) refusals.push({ pid: r.pid, error: `no answer within ${PREPARE_TIMEOUT_MS / 1000} s` });
      else if (!r.answer.ok) refusals.push({ pid: r.pid, error: r.answer.error });
      else if (r.answer.handlers !== handlers) {
        refusals.push({ pid: r.pid, error: `compiled other handler code (${r.answer.handlers}) than the primary read (${handlers})` });
      }
    }
    return refusals;
  }

  /** Brings worker w to the running generation, asking again with a growing delay while it refuses. */
  async catchUp(w) {
    const s = this.workers.get(w);
    if (s === undefined || s.catchingUp) return;
    s.catchingUp = true;
    let failures = 0;
    while (!this.closed && this.workers.get(w) === s && s.generation !== this.generation) {
      const target = this.generation;
      const a = await this.ask(w, 'reload', { generation: target, settings: this.settings, sources: this.sources }, PREPARE_TIMEOUT_MS);
      if (a !== undefined && a.ok) {
        s.generation = a.generation;
        if (s.error !== null) this.log.info(`worker ${s.pid} runs generation ${s.generation} now`);
        s.error = null;
        continue;
      }
      s.error = a === undefined ? 'no answer' : a.error;
      const delay = CATCH_UP_RETRY_MS[Math.min(failures, CATCH_UP_RETRY_MS.length - 1)];
      if (failures === 0) {
        this.log.error(`worker ${s.pid} runs generation ${s.generation}, not ${target}: ${s.error}; asked again, every ${delay / 1000} s and less often after`);
      }
      failures++;
      await sleep(delay);
    }
    s.catchingUp = false;
  }

  /** For /status and /health: each worker that is up and the generation it runs. */
  toJSON() {
    return [...this.workers.values()].map((s) => ({ pid: s.pid, generation: s.generation, ...(s.error === null ? {} : { error: s.error }) }));
  }

  /** Whether every worker that is up runs the running generation. */
  get converged() {
    for (const s of this.workers.values()) if (s.generation !== this.generation) return false;
    return true;
  }

  close() {
    this.closed = true;
  }
}

module.exports = { Generations };
