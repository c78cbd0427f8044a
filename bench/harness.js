'use strict';

// What the benchmarks share: child processes (servers under test, each its own process), a lean
// pipelined GED-145 client (the same for the bare server and the gateway), process sampling,
// medians of repeated runs.

const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const net = require('node:net');
const { performance } = require('node:perf_hooks');
const { MessageReader, serialize, DIRECTION } = require('../lib/protocol');
const { newHistogram } = require('../simulator/stats');
const { readProc } = require('../runner/monitor');
const { startChild, BIN } = require('../lib/child');

const ROOT = path.join(__dirname, '..');

/** Starts a node script; resolves when `ready` matches its stdout+stderr (a script that prints its port). */
async function start(args, ready, { env = {} } = {}) {
  const p = await startChild({ script: args, readyPattern: ready, env, cwd: ROOT });
  return { child: p.child, match: p.match, pid: p.pid, stop: () => stop(p.child) };
}

/**
 * `ged145 gateway` of this checkout or another (bin: its bin/ged145.js, to compare builds in one
 * run), with nodeArgs for its process: {child, pid, port, adminPort, stop}. This checkout says
 * where it listens with --ready-json; an older build is read from its log lines.
 */
async function startGatewayProcess({
  bin = BIN, nodeArgs = [], args = [], env = {},
}) {
  const cli = ['gateway', ...args];
  if (bin === BIN) {
    const p = await startChild({
      cli, nodeArgs, env, cwd: ROOT,
    });
    return { child: p.child, pid: p.pid, port: p.ready.port, adminPort: p.ready.adminPort, stop: () => stop(p.child) };
  }
  const p = await startChild({
    cli, bin, nodeArgs, env, cwd: ROOT, readyPattern: /listening for ICM routers on [\d.]+:(\d+)[\s\S]*admin on http:\/\/[\d.]+:(\d+)/,
  });
  return { child: p.child, pid: p.pid, port: Number(p.match[1]), adminPort: Number(p.match[2]), stop: () => stop(p.child) };
}

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => { clearTimeout(t); resolve(); });
    child.kill('SIGTERM');
    return undefined;
  });
}

/** A bench/ script that prints the port it listens on; env: more variables for its process. */
const startListener = (file, args = [], nodeArgs = [], env = {}) => start([...nodeArgs, path.join(__dirname, file), ...args], /^(\d+)\n/, { env })
  .then((p) => ({ ...p, port: Number(p.match[1]) }));
const startBare = () => startListener('bare-server.js');
/** nodeArgs: for its process (bench/profile.js: --cpu-prof). */
const startBareProxy = (backendUrl, nodeArgs = [], env = {}) => startListener('bare-proxy.js', [backendUrl], nodeArgs, env);
const startPlainBackend = (nodeArgs = [], env = {}) => startListener('plain-backend.js', [], nodeArgs, env)
  .then((p) => ({ ...p, url: `http://127.0.0.1:${p.port}` }));
async function startRestSim() {
  const p = await startChild({ cli: ['rest-sim', '--port', '0'], cwd: ROOT });
  return { child: p.child, pid: p.pid, url: p.ready.url, stop: () => stop(p.child) };
}

/** BENCH_GATEWAY_NODE_ARGS: V8/Node flags for the gateway process only, e.g. --max-semi-space-size=2. */
const GATEWAY_NODE_ARGS = (process.env.BENCH_GATEWAY_NODE_ARGS || '').split(' ').filter(Boolean);

/**
 * A gateway on free ports; bin: another checkout's bin/ged145.js, to compare builds in one run;
 * nodeArgs: Node/V8 flags for this gateway (BENCH_GATEWAY_NODE_ARGS by default); env: more
 * variables for its process.
 */
function startGateway(backendUrl, extra = [], bin = BIN, nodeArgs = GATEWAY_NODE_ARGS, env = {}) {
  return startGatewayProcess({
    bin, nodeArgs, env, args: ['--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', backendUrl, '--log-level', 'info', ...extra],
  });
}

const QUERY = { routerCallDay: 1, subtype: 'customer.lookup', clid: '5551000042', dn: '8005551000', vars: { 1: 'abc' } };

/**
 * A closed-loop GED-145 client: `window` requests outstanding for `durationMs`.
 * kind 'heartbeat' | 'query'. Returns {rate, p50, p99, p999, max (ms), errors, lost, duplicated,
 * cpuUsPerQuery (the client's own CPU)}. observe: {sent(), received()}, told of each write and
 * each chunk read (bench/critical-path.js notes their moments), or null.
 */
async function runClient({
  port, kind = 'heartbeat', window = 1, durationMs = 3000, warmupMs = 500, observe = null,
}) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await new Promise((r, j) => { socket.once('connect', r); socket.once('error', j); });
  const hist = newHistogram();
  const pending = new Map();
  let nextId = 1;
  let done = 0;
  let errors = 0;
  let duplicated = 0;
  let measuring = false;
  let stopping = false;
  let resolveOpen;
  let finish;
  const opened = new Promise((r) => { resolveOpen = r; });
  const finished = new Promise((r) => { finish = r; });
  const send = () => {
    const id = nextId++;
    pending.set(id, performance.now());
    const bytes = kind === 'heartbeat' ? serialize.heartbeatReq(id) : serialize.queryReq({ ...QUERY, invokeId: id, routerCallKey: id });
    if (observe !== null) observe.sent();
    socket.write(bytes);
  };
  const reader = new MessageReader({
    direction: DIRECTION.HOST_TO_ROUTER,
    onMessage(m) {
      if (m.type === 'OPEN_CONF') return resolveOpen();
      const sentAt = pending.get(m.invokeId);
      if (sentAt === undefined) { duplicated++; return undefined; }
      pending.delete(m.invokeId);
      if (measuring) {
        hist.recordValue(Math.max(1, Math.round((performance.now() - sentAt) * 1000)));
        done++;
        if (m.status) errors++;
      }
      if (!stopping) send();
      else if (pending.size === 0) finish();
      return undefined;
    },
    onError: () => { errors++; },
  });
  socket.on('data', (c) => {
    if (observe !== null) observe.received();
    reader.push(c);
  });
  socket.write(serialize.openReq({ invokeId: 0xffffffff, version: 2, idleTimeoutMs: 60_000, config: 'bench' }));
  await opened;
  for (let i = 0; i < window; i++) send();
  await new Promise((r) => setTimeout(r, warmupMs));
  measuring = true;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, durationMs));
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  measuring = false;
  const counted = done;
  stopping = true;
  const drained = await Promise.race([finished.then(() => true), new Promise((r) => setTimeout(() => r(false), 2000))]);
  socket.destroy();
  const ms = (p) => hist.getValueAtPercentile(p) / 1000;
  return {
    rate: (counted * 1000) / elapsed, p50: ms(50), p99: ms(99), p999: ms(99.9), max: hist.maxValue / 1000, errors, lost: drained ? 0 : pending.size, duplicated,
    cpuUsPerQuery: (cpu.user + cpu.system) / counted, // this (the router's) process
  };
}

/**
 * The gateway's engine calling the backend directly (bench/direct-http.js, its own process) at
 * `concurrency` for SECONDS: {rate, p50, p99, errors}. deadline: 'none' (a bare POST, the physical
 * limit), 'controller' or 'timeout' (how each request carries a 250 ms deadline).
 */
async function runDirect(engine, url, concurrency, deadline = 'none') {
  const env = { ...process.env, BENCH_DIRECT_DEADLINE: deadline };
  const args = [path.join(__dirname, 'direct-http.js'), engine, url, String(concurrency), String(SECONDS)];
  const { stdout } = await promisify(execFile)(process.execPath, args, { env });
  return JSON.parse(stdout);
}

/** CPU seconds and RSS of a process between two calls. */
function cpuMeter(pid) {
  const first = readProc(pid);
  const t0 = performance.now();
  return () => {
    const now = readProc(pid);
    return { cpuPct: ((now.ticks - first.ticks) / 100 / ((performance.now() - t0) / 1000)) * 100, rssMb: now.rssKb / 1024 };
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs fn() `repeats` times and returns the run whose `key` is the median. */
async function medianRun(repeats, key, fn) {
  const runs = [];
  for (let i = 0; i < repeats; i++) runs.push(await fn());
  const m = median(runs.map((r) => r[key]));
  return { ...runs.find((r) => r[key] === m), runs: runs.map((r) => r[key]) };
}

const REPEATS = Number(process.env.BENCH_REPEATS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 3);

module.exports = {
  start, startBare, startBareProxy, startPlainBackend, startRestSim, startGateway, startGatewayProcess, runClient, runDirect, cpuMeter, medianRun, median,
  REPEATS, SECONDS, QUERY, BIN, GATEWAY_NODE_ARGS,
};
