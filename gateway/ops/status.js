'use strict';

// What the admin port's status page (/) and its JSON (/status) show of one gateway process: the
// last five minutes second by second (queries by outcome and subtype, their latency as bucket
// counts, backend requests), the process (version, uptime, CPU, RSS, event-loop lag), the last
// warnings and errors logged, and the last reload. Latency is kept as counts per bucket, not as
// percentiles, so that a cluster primary can add its workers' seconds together before the page
// reads p50 and p99 out of them (mergeStatus).

const { monitorEventLoopDelay } = require('node:perf_hooks');
const winston = require('winston');
const { version: VERSION } = require('../../package.json');
const { NOISE } = require('../session/connection-log');

const WINDOW_S = 300;
/** Upper bounds of the latency buckets, ms; the last one (null in JSON) takes the rest. */
const LATENCY_BOUNDS_MS = Object.freeze([1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 250, 300, 500, 1000, Infinity]);
const RECENT_LINES = 20;

const bucketOf = (ms) => {
  let i = 0;
  while (ms > LATENCY_BOUNDS_MS[i]) i++;
  return i;
};

const newBuckets = () => new Array(LATENCY_BOUNDS_MS.length).fill(0);
/**
 * A map keyed by router text (a subtype may be "__proto__" or "constructor"): no prototype, so
 * such a key is a key like any other and never reaches Object.prototype.
 */
const dict = () => Object.create(null);

/** Per-second counts for the last WINDOW_S seconds; a second with nothing in it is not kept. */
class History {
  constructor(windowS = WINDOW_S, now = Date.now) {
    this.windowS = windowS;
    this.now = now;
    this.seconds = [];
    this.current = null;
  }

  slot() {
    const t = Math.floor(this.now() / 1000);
    if (this.current === null || this.current.t !== t) this.roll(t);
    return this.current;
  }

  roll(t) {
    if (this.current !== null) this.seconds.push(this.current);
    let drop = 0;
    while (drop < this.seconds.length && this.seconds[drop].t <= t - this.windowS) drop++;
    if (drop > 0) this.seconds.splice(0, drop);
    // Maps on the query path (a subtype is router text, "__proto__" included; a Map takes any key
    // and stays fast), plain objects only in toJSON.
    this.current = {
      t, outcomes: new Map(), subtypes: new Map(), latency: newBuckets(), backend: new Map(), backendLatency: newBuckets(),
    };
  }

  /** A query answered (or lost): its metrics label for the subtype, its outcome label, seconds since it arrived. */
  query(subtype, outcome, seconds) {
    const s = this.slot();
    const b = bucketOf(seconds * 1000);
    s.latency[b]++;
    count(s.outcomes, outcome, b);
    count(s.subtypes, subtype, b);
  }

  /** A backend request ended: its class ('2xx', '5xx', 'error'), and its round trip when it got an answer. */
  backend(responseClass, seconds) {
    const s = this.slot();
    s.backend.set(responseClass, (s.backend.get(responseClass) || 0) + 1);
    if (seconds !== null) s.backendLatency[bucketOf(seconds * 1000)]++;
  }

  toJSON() {
    this.slot();
    return { bounds: LATENCY_BOUNDS_MS.map((b) => (b === Infinity ? null : b)), seconds: [...this.seconds, this.current].map(secondJson) };
  }
}

/** One more query under key in a second's map: its count and its latency bucket. */
function count(map, key, bucket) {
  let e = map.get(key);
  if (e === undefined) {
    e = { n: 0, latency: newBuckets() };
    map.set(key, e);
  }
  e.n++;
  e.latency[bucket]++;
}

/** A second as JSON: objects made with fromEntries, so a key "__proto__" is an own property like any other. */
function secondJson(s) {
  const of = (map, f) => Object.fromEntries([...map].map(([k, v]) => [k, f(v)]));
  return {
    t: s.t,
    outcomes: of(s.outcomes, (e) => e.n),
    subtypes: of(s.subtypes, (e) => e.n),
    latency: s.latency,
    byOutcome: of(s.outcomes, (e) => e.latency),
    bySubtype: of(s.subtypes, (e) => e.latency),
    backend: of(s.backend, (n) => n),
    backendLatency: s.backendLatency,
  };
}

/**
 * The last warnings and errors logged, for the page (a winston transport), in two lists: the
 * lines about connections that never became a session (refusals, failed handshakes, missing or
 * refused OPEN_REQs, and their summaries: session/connection-log.js), which any host that reaches
 * the port can cause by the thousand, apart from the rest, so that such a flood cannot push a
 * refused reload or a failing backend off the page.
 */
class RecentLines extends winston.Transport {
  constructor() {
    super({ level: 'warn' });
    this.lines = [];
    this.connectionLines = [];
  }

  log(info, callback) {
    const list = info[NOISE] === true ? this.connectionLines : this.lines;
    list.push({ at: new Date().toISOString(), level: info.level, message: String(info.message) });
    if (list.length > RECENT_LINES) list.shift();
    callback();
  }
}

/** Keeps what a process's status needs between two looks: CPU since the last, the event loop's delay. */
class ProcessStatus {
  constructor() {
    this.startedAt = new Date();
    this.lastCpu = process.cpuUsage();
    this.lastAt = process.hrtime.bigint();
    this.delay = monitorEventLoopDelay({ resolution: 10 });
    this.delay.enable();
  }

  toJSON() {
    const cpu = process.cpuUsage(this.lastCpu);
    const at = process.hrtime.bigint();
    const elapsedUs = Number(at - this.lastAt) / 1000;
    this.lastCpu = process.cpuUsage();
    this.lastAt = at;
    const mem = process.memoryUsage();
    const lag = {
      meanMs: round(Math.max(0, this.delay.mean / 1e6 - 10)), p99Ms: round(Math.max(0, this.delay.percentile(99) / 1e6 - 10)),
    };
    this.delay.reset();
    return {
      pid: process.pid,
      version: VERSION,
      node: process.version,
      startedAt: this.startedAt.toISOString(),
      uptimeS: Math.round(process.uptime()),
      cpuPercent: elapsedUs > 0 ? round((100 * (cpu.user + cpu.system)) / elapsedUs) : 0,
      rssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      eventLoopLag: Number.isFinite(lag.meanMs) ? lag : { meanMs: 0, p99Ms: 0 },
    };
  }

  close() {
    this.delay.disable();
  }
}
const round = (n) => Math.round(n * 10) / 10;

/**
 * One status from several processes' (a cluster primary and its workers): sessions side by side,
 * counters and seconds added up, each process listed.
 */
function mergeStatus(primary, workers) {
  const byT = new Map();
  const copy = (from, f = (v) => v) => {
    const out = dict();
    for (const [k, v] of Object.entries(from)) out[k] = f(v);
    return out;
  };
  const add = (into, from) => { for (const [k, v] of Object.entries(from)) into[k] = (into[k] || 0) + v; };
  const addBuckets = (into, from) => {
    for (const [k, v] of Object.entries(from)) {
      if (into[k] === undefined) into[k] = [...v];
      else v.forEach((n, i) => { into[k][i] += n; });
    }
  };
  for (const w of workers) {
    for (const s of w.history.seconds) {
      const m = byT.get(s.t);
      if (m === undefined) {
        byT.set(s.t, {
          ...s,
          outcomes: copy(s.outcomes),
          subtypes: copy(s.subtypes),
          backend: copy(s.backend),
          byOutcome: copy(s.byOutcome, (b) => [...b]),
          bySubtype: copy(s.bySubtype, (b) => [...b]),
          latency: [...s.latency],
          backendLatency: [...s.backendLatency],
        });
        continue;
      }
      add(m.outcomes, s.outcomes);
      add(m.subtypes, s.subtypes);
      addBuckets(m.byOutcome, s.byOutcome);
      addBuckets(m.bySubtype, s.bySubtype);
      add(m.backend, s.backend);
      s.latency.forEach((n, i) => { m.latency[i] += n; });
      s.backendLatency.forEach((n, i) => { m.backendLatency[i] += n; });
    }
  }
  const refused = dict();
  for (const w of workers) add(refused, w.refused);
  return {
    ...primary,
    processes: [primary.processes[0], ...workers.map((w) => w.processes[0])],
    sessions: workers.flatMap((w) => w.sessions.map((s) => ({ ...s, pid: w.processes[0].pid }))),
    refused,
    history: { bounds: workers.length > 0 ? workers[0].history.bounds : [], seconds: [...byT.values()].sort((a, b) => a.t - b.t) },
    backend: workers.map((w) => ({ pid: w.processes[0].pid, ...w.backend })),
    handlers: mergeHandlers(workers.map((w) => w.handlers || {})),
    warnings: lastOf([primary, ...workers], 'warnings'),
    connectionWarnings: lastOf([primary, ...workers], 'connectionWarnings'),
  };
}

/** The last RECENT_LINES of the processes' lists under key, oldest first. */
function lastOf(statuses, key) {
  return statuses.flatMap((s) => s[key] || []).sort((a, b) => (a.at < b.at ? -1 : 1)).slice(-RECENT_LINES);
}

/** Handler faults per route over several processes: counts added, the latest error kept. */
function mergeHandlers(lists) {
  const out = dict();
  for (const list of lists) {
    for (const [subtype, e] of Object.entries(list)) {
      const m = out[subtype];
      if (m === undefined) out[subtype] = { ...e };
      else {
        m.escaped += e.escaped;
        m.badAnswers += e.badAnswers;
        if (e.lastErrorAt !== null && (m.lastErrorAt === null || e.lastErrorAt > m.lastErrorAt)) {
          m.lastError = e.lastError;
          m.lastErrorAt = e.lastErrorAt;
        }
      }
    }
  }
  return out;
}

module.exports = {
  History, RecentLines, ProcessStatus, mergeStatus, LATENCY_BOUNDS_MS,
};
