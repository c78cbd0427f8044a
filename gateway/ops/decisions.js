'use strict';

// The decision log (`decisions`, docs/safe-change.md): one JSON line per sampled query, saying what
// was asked, where it went, what came back and what the router got, so that a call ICM shows in
// Route_Call_Detail can be found by its RouterCallDay and RouterCallKey (`ged145 why`). A subscriber
// of the core's channels (docs/diagnostics.md) like the metrics: off, it subscribes to nothing.
//
// The query path only pays for a share check and a push: a settled query's parts are queued (at
// most MAX_QUEUED; past it a record is dropped and counted), and the lines are built and written
// after it, gathered for GATHER_MS, SLICE at a time with a turn of the event loop between slices,
// one write in flight, to a file rotated as the log is (lib/logger.js rotatingFile) and gzipped
// when rotated.
//
// Sampling goes by a hash of RouterCallDay and RouterCallKey, so both router sides and a query
// sent again agree: a call is logged from both sides or from neither. With --workers each worker
// writes a file of its own (decisions.jsonl -> decisions.w3.jsonl): two processes never append to,
// or rotate, the same file, and no record crosses the IPC channel; `ged145 why` reads them all.

const cluster = require('node:cluster');
const path = require('node:path');
const { channels: core } = require('../session/diagnostics');
const { channels: backend } = require('../backend/diagnostics');
const { LABEL } = require('../backend/outcome');
const { describeQuery } = require('../session/redact');
const { rotatingFile, MAX_SIZE } = require('../../lib/logger');
const { hideCallerData } = require('../../lib/redact');
const { callShare, SALT } = require('../call-share');
const { decodeFrame, DIRECTION, STATUS_NAMES } = require('../../lib/protocol');

const MAX_QUEUED = 8192; // about four seconds of 2,000 queries/s: a file that stalls longer costs records, never memory
const SLICE = 256; // records per write: the lines of one slice are built in well under a millisecond
const GATHER_MS = 100; // records gather this long before a write: a write per query would cost more than the records
const DROP_LOG_MS = 60_000;
const STOP_MS = 2000;
const MESSAGE = Symbol.for('message'); // winston's (triple-beam): the text a transport writes
const WRITTEN = 'ged145_decisions_written_total';
const DROPPED = 'ged145_decisions_dropped_total';

/** Where the answer came from, by outcome label; null: no answer came from anywhere. */
const SOURCE = Object.freeze({
  [LABEL.OK]: 'backend',
  [LABEL.APP_ERROR]: 'backend',
  [LABEL.CACHED]: 'cache',
  [LABEL.STALE]: 'stale',
  [LABEL.FALLBACK]: 'fallback',
  [LABEL.DUPLICATE]: 'duplicate',
});

/** The file a process writes: file itself, or for cluster worker `worker` its own beside it (decisions.w3.jsonl). */
function fileOf(file, worker) {
  if (worker === null) return file;
  const ext = path.extname(file);
  return `${file.slice(0, file.length - ext.length)}.w${worker}${ext}`;
}

/** What a query as a log line shows of itself (log.redact), without what the record has apart. */
function fieldsOf(m, redact) {
  const out = describeQuery(m, undefined, redact);
  delete out.session;
  delete out.invokeId;
  delete out.subtype;
  return out;
}

/**
 * What the router got, read back from the frame written: QUERY_RESP with its fields, FAILURE_CONF
 * with its status name and text; on an encrypted session the values are ciphertext, so the type
 * and status only.
 */
function replyOf(e, redact) {
  if (e.reply === null) return null;
  if (e.encrypted) {
    return { type: e.status === null ? 'QUERY_RESP' : 'FAILURE_CONF', status: e.status === null ? 0 : e.status, encrypted: true };
  }
  let m;
  try {
    m = decodeFrame(e.reply, { direction: DIRECTION.HOST_TO_ROUTER, profile: e.profile });
  } catch {
    return { type: 'unreadable' };
  }
  if (m.type === 'QUERY_RESP') return { type: m.type, status: m.status, fields: fieldsOf(m, redact) };
  const out = { type: m.type, status: STATUS_NAMES[m.status] || m.status };
  if (m.error !== undefined) out.error = redact ? hideCallerData(m.error, e.query.fields) : m.error;
  return out;
}

/**
 * Of a query's requests, the one whose result the query got: the last that was not cut because
 * another answered first (a hedged request's loser, or the first request when the hedge won, ends
 * `aborted`), else the last; `attempts` counts every request, a hedge too.
 */
function answeringRequest(all) {
  let pick = all[all.length - 1];
  for (let i = all.length - 1; i >= 0; i--) {
    if (all[i].result !== 'aborted') {
      pick = all[i];
      break;
    }
  }
  return { ...pick, attempts: Math.max(...all.map((r) => r.attempts)) };
}

/** One record, as its line: RouterCallDay and RouterCallKey first, where `ged145 why` looks. */
function recordOf(e, redact, worker) {
  const q = e.query.fields;
  const r = e.request;
  return {
    time: new Date(e.at).toISOString(),
    routerCallDay: q.routerCallDay,
    routerCallKey: q.routerCallKey,
    side: e.query.side === undefined ? null : e.query.side,
    subtype: e.query.subtype === undefined ? null : e.query.subtype,
    invokeId: q.invokeId,
    session: e.session,
    peer: e.peer,
    worker,
    query: fieldsOf(q, redact),
    route: r === undefined || r.template === null ? null : `${r.method} ${r.template}`,
    origin: r === undefined ? null : r.origin,
    attempts: r === undefined ? 0 : r.attempts,
    backendResult: r === undefined ? null : r.result,
    outcome: e.outcome,
    status: e.status,
    source: e.canary && SOURCE[e.outcome] === 'backend' ? 'canary' : SOURCE[e.outcome] || null,
    ms: Math.round(e.ms * 100) / 100,
    late: e.late,
    traceId: e.query.labels.trace_id || null,
    reply: replyOf(e, redact),
  };
}

class DecisionLog {
  /**
   * settings: the compiled `decisions` ({file, sample}), file set and sample above 0; gateway: the
   * one whose queries are written (a process may hold others: the warm-up's); registry: its
   * metrics; worker: the cluster worker's id, null for one process; maxSize: where a file is
   * rotated (the log's 10 MB; a test rotates sooner).
   */
  constructor(settings, {
    gateway, log, registry, worker = cluster.isWorker ? cluster.worker.id : null, maxSize = MAX_SIZE,
  }) {
    this.gateway = gateway;
    this.log = log;
    this.sample = settings.sample;
    this.worker = worker;
    this.file = fileOf(settings.file, worker);
    this.out = rotatingFile(this.file, { zipped: true, maxSize });
    this.out.on('error', (err) => this.onWriteError(err));
    this.queue = [];
    this.writing = false; // a slice is with the file, or one is scheduled
    this.written = 0;
    this.dropped = 0;
    this.unlogged = 0;
    this.loggedAt = null;
    this.idle = null; // resolves when the queue is written (close)
    this.ended = false;
    this.requests = new WeakMap(); // a sampled query (the core's message) -> its backend requests, in the order they started
    this.canaries = new WeakSet(); // the queries a canary's candidate answered (their QUERY_REQ)
    this.counters = counters(registry);
    this.subscribers = [
      [core.querySettle, (m) => this.onSettle(m)],
      [backend.requestStart, (m) => this.onRequestStart(m)],
      [backend.requestEnd, (m) => this.onRequestEnd(m.request, m.result)],
      [backend.requestError, (m) => this.onRequestEnd(m.request, m.reason)],
      [backend.canaryAnswer, (m) => this.onCanary(m)],
    ];
    for (const [channel, fn] of this.subscribers) channel.subscribe(fn);
    this.writeNext = () => this.writeSlice();
  }

  sampled(q) {
    return this.sample >= 1 || callShare(q.routerCallDay, q.routerCallKey, SALT.DECISIONS) < this.sample;
  }

  onRequestStart({ gateway, query, request }) {
    if (gateway !== this.gateway || query === null || request.kind !== 'query' || !this.sampled(query)) return;
    const started = {
      method: request.method, template: request.template, origin: request.origin, attempts: request.attempt, result: null,
    };
    const all = this.requests.get(query);
    if (all === undefined) this.requests.set(query, [started]);
    else all.push(started);
  }

  onCanary({ gateway, query }) {
    if (gateway === this.gateway) this.canaries.add(query);
  }

  onRequestEnd(request, result) {
    if (request.query === null || request.gateway !== this.gateway) return;
    const all = this.requests.get(request.query);
    const r = all === undefined ? undefined : all.find((x) => x.origin === request.origin && x.attempts === request.attempt);
    if (r !== undefined) r.result = result;
  }

  onSettle({
    gateway, session, query, outcome, status, ms, late, reply,
  }) {
    if (gateway !== this.gateway || !this.sampled(query.fields)) return;
    if (this.queue.length >= MAX_QUEUED) {
      this.drop(1);
      return;
    }
    const all = this.requests.get(query.fields);
    if (all !== undefined) this.requests.delete(query.fields);
    const request = all === undefined ? undefined : answeringRequest(all);
    this.queue.push({
      at: Date.now(),
      session: session.id,
      peer: session.peer,
      encrypted: session.encrypted === true,
      profile: session.profile,
      query,
      outcome,
      status,
      ms,
      late,
      reply: reply === undefined ? null : reply,
      request,
      canary: this.canaries.has(query.fields),
    });
    if (!this.writing) {
      this.writing = true;
      setTimeout(this.writeNext, GATHER_MS);
    }
  }

  /** The next SLICE records to the file; the one after once it took them. */
  writeSlice() {
    if (this.ended) return; // closed before the file took the last slice: what is left stays unwritten
    if (this.queue.length === 0) {
      this.writing = false;
      if (this.idle !== null) this.idle();
      return;
    }
    const slice = this.queue.length <= SLICE ? this.queue : this.queue.slice(0, SLICE);
    this.queue = slice === this.queue ? [] : this.queue.slice(SLICE);
    const redact = this.gateway.config.log.redact;
    let text = '';
    for (const e of slice) text += `${text === '' ? '' : '\n'}${JSON.stringify(recordOf(e, redact, this.worker))}`;
    this.out.log({ [MESSAGE]: text }, () => {
      this.written += slice.length;
      this.counters.written.inc(slice.length);
      // A full slice behind it is written next; fewer wait to gather more.
      if (this.queue.length >= SLICE || this.idle !== null) setImmediate(this.writeNext);
      else if (this.queue.length > 0) setTimeout(this.writeNext, GATHER_MS);
      else this.writeSlice(); // nothing queued: not writing any more
    });
  }

  drop(n) {
    this.dropped += n;
    this.counters.dropped.inc(n);
    this.unlogged += n;
    const now = Date.now();
    if (this.loggedAt !== null && now - this.loggedAt < DROP_LOG_MS) return;
    this.log.warn(`decisions: ${this.unlogged} record(s) dropped${this.loggedAt === null ? '' : ' in the last minute'}: `
      + `${this.file} did not take them as fast as queries came; queries are not affected (${DROPPED} counts every one)`);
    this.loggedAt = now;
    this.unlogged = 0;
  }

  onWriteError(err) {
    const now = Date.now();
    if (this.loggedAt !== null && now - this.loggedAt < DROP_LOG_MS) return;
    this.loggedAt = now;
    this.log.warn(`decisions: ${this.file} cannot be written (${err.code || err.message}); queries are not affected, records are dropped and counted`);
  }

  /** What /status shows of it, per process. */
  toJSON() {
    return {
      file: this.file, sample: this.sample, written: this.written, dropped: this.dropped, queued: this.queue.length,
    };
  }

  /** Unsubscribes, writes what is queued and closes the file: at most STOP_MS. */
  async close() {
    for (const [channel, fn] of this.subscribers) channel.unsubscribe(fn);
    let timer;
    const bounded = (p) => Promise.race([p, new Promise((resolve) => { timer = setTimeout(resolve, STOP_MS); })]).finally(() => clearTimeout(timer));
    if (this.writing) await bounded(new Promise((resolve) => { this.idle = resolve; }));
    this.ended = true;
    await bounded(new Promise((resolve) => {
      this.out.once('finish', resolve);
      this.out.end();
    }));
  }
}

function counters(registry) {
  const client = require('prom-client');
  return {
    written: registry.getSingleMetric(WRITTEN) || new client.Counter({
      name: WRITTEN, help: 'Decision records written (decisions.file)', registers: [registry],
    }),
    dropped: registry.getSingleMetric(DROPPED) || new client.Counter({
      name: DROPPED, help: 'Decision records dropped: the file did not take them as fast as queries came', registers: [registry],
    }),
  };
}

/** The decision log of gateway when `decisions` asks for one, else null (nothing subscribed). */
function startDecisions(config, options) {
  const settings = config.decisions;
  if (settings === undefined || settings.file === null || settings.sample <= 0) return null;
  return new DecisionLog(settings, options);
}

module.exports = { startDecisions, DecisionLog, MAX_QUEUED };
