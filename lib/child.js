'use strict';

// One way to run a part of the product as a child process and know when it is up: the runner,
// the benchmarks and the tests all start `ged145 gateway` and `ged145 rest-sim` through this.
// The child is started with --ready-json and says it is ready with one JSON line on stdout,
// {"ready": "gateway", "pid", "host", "port", "adminPort", ...} (docs/operations.md), instead of
// the caller reading ports out of log text. A node script of our own (bench/bare-server.js)
// that prints its port, or another checkout's build from before --ready-json, is recognised by
// `readyPattern` on its output instead.

const { spawn } = require('node:child_process');
const path = require('node:path');

const BIN = path.join(__dirname, '..', 'bin', 'ged145.js');
const TAIL_BYTES = 20_000;
const running = new Set();
let exitHook = false;

/**
 * startChild(args, options) -> Promise<{child, ready, match, pid, logTail(), stop()}>.
 * args: what follows `node` (default: [BIN, ...cliArgs] with cliArgs given as `cli`).
 * options: {cli, readyPattern, env, cwd, timeoutMs, nodeArgs}; ready is the parsed JSON line,
 * match the readyPattern's match.
 */
function startChild({
  cli, script, bin = BIN, readyPattern = null, env = {}, cwd, timeoutMs = 20_000, nodeArgs = [],
}) {
  const args = cli !== undefined ? [...nodeArgs, bin, ...cli, ...(readyPattern === null ? ['--ready-json'] : [])] : [...nodeArgs, ...script];
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => { for (const c of running) c.kill('SIGKILL'); });
  }
  let out = '';
  let tail = '';
  const logTail = () => tail;
  child.stderr.on('data', (d) => { tail = (tail + d).slice(-TAIL_BYTES); });
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (err, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.stdout.off('data', onOut);
      child.stderr.off('data', onErr);
      child.stdout.resume(); // later output is not kept, and must not fill the pipe
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done(new Error(`${args.join(' ')} did not start within ${timeoutMs} ms:\n${out}${tail}`));
    }, timeoutMs);
    const found = (ready, match) => done(null, {
      child, ready, match, pid: child.pid, logTail, stop: (signal) => stopChild(child, signal),
    });
    const onOut = (d) => {
      out += d;
      check();
    };
    const onErr = () => check();
    const check = () => {
      if (readyPattern !== null) {
        const m = readyPattern.exec(out + tail);
        if (m) found(null, m);
        return;
      }
      const ready = readyOf(out);
      if (ready !== null) found(ready, null);
    };
    child.stdout.on('data', onOut);
    child.stderr.on('data', onErr);
    child.once('exit', (code, signal) => done(new Error(`${args.join(' ')} exited (${signal || code}) before it was ready:\n${out}${tail}`)));
  });
}

/** SIGTERM (or signal), SIGKILL after graceMs; resolves with the exit code. */
function stopChild(child, signal = 'SIGTERM', graceMs = 8000) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(child.exitCode);
      return;
    }
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', (code) => {
      clearTimeout(t);
      resolve(code);
    });
    child.kill(signal);
  });
}

/** The --ready-json line in a process's output so far (whole lines only), parsed; null until it came. */
function readyOf(out) {
  for (const line of out.split('\n').slice(0, -1)) {
    if (line.startsWith('{"ready"')) return JSON.parse(line);
  }
  return null;
}

/** The line a process started with --ready-json prints once it serves. */
function announceReady(info) {
  process.stdout.write(`${JSON.stringify({ ready: info.ready, pid: process.pid, ...info })}\n`);
}

module.exports = { startChild, announceReady, BIN, readyOf };
