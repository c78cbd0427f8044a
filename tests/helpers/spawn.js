'use strict';

// Runs bin/ged145.js (or npm) as a real child process; waits for its --ready-json line, or for lines it logs.

const { spawn } = require('node:child_process');
const path = require('node:path');
const { readyOf } = require('../../lib/child');

const ROOT = path.join(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'ged145.js');

/**
 * A gateway started here skips its warm-up (2.3 s of synthetic queries) unless the test asks for
 * it with env {GED145_WARMUP: '1'}: tests/gateway/ops/warmup.test.js covers the warm-up itself.
 */
function spawnCli(args, { env = {}, cmd = process.execPath, cmdArgs, group = false } = {}) {
  const child = spawn(cmd, cmdArgs || [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, GED145_WARMUP: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group, // its own process group, so that killGroup reaches npm's children too
  });
  child.killGroup = (signal = 'SIGTERM') => {
    try {
      process.kill(group ? -child.pid : child.pid, signal);
    } catch {
      // already gone
    }
  };
  child.out = '';
  child.err = '';
  child.stdout.on('data', (d) => { child.out += d; });
  child.stderr.on('data', (d) => { child.err += d; });
  child.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  /** Resolves with the regexp match once stdout+stderr contain it. */
  child.waitFor = (re, ms = 10_000) => new Promise((resolve, reject) => {
    const started = Date.now();
    const check = () => {
      const m = re.exec(child.out + child.err);
      if (m) return resolve(m);
      if (child.exitCode !== null) return reject(new Error(`process exited (${child.exitCode}) before ${re}:\n${child.out}${child.err}`));
      if (Date.now() - started > ms) return reject(new Error(`timed out waiting for ${re}:\n${child.out}${child.err}`));
      return setTimeout(check, 20);
    };
    check();
  });
  /** The --ready-json line (lib/child.js) once the process serves: {ready, port, adminPort, url...}. */
  child.ready = (ms = 20_000) => child.waitFor(/^\{"ready".*\n/m, ms).then(() => readyOf(child.out));
  return child;
}

/**
 * `ged145 rest-sim` and a `ged145 gateway` asking it, two child processes as users start them:
 * {sim, gw (gw.port: where routers connect), kill() (SIGKILL to whichever still runs)}.
 */
async function spawnSimAndGateway() {
  const sim = spawnCli(['rest-sim', '--port', '0', '--ready-json']);
  let gw = null;
  const kill = () => {
    for (const p of [gw, sim]) if (p !== null && p.exitCode === null) p.kill('SIGKILL');
  };
  try {
    const { url } = await sim.ready();
    gw = spawnCli(['gateway', '--port', '0', '--host', '127.0.0.1', '--admin-port', '0', '--backend', url, '--ready-json']);
    gw.port = Number((await gw.ready()).port);
  } catch (err) {
    kill();
    throw err;
  }
  return { sim, gw, kill };
}

/** Runs to completion: {code, out, err}. */
async function runCli(args, opts) {
  const child = spawnCli(args, opts);
  const { code } = await child.exited;
  return { code, out: child.out, err: child.err };
}

module.exports = {
  spawnCli, runCli, spawnSimAndGateway, ROOT, BIN,
};
