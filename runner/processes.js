'use strict';

// Starts the REST simulator and the gateway as child processes on free ports (what a suite runs
// against by default), and stops them. Ports are read from the processes' own log lines.

const path = require('node:path');
const { spawn } = require('node:child_process');

const BIN = path.join(__dirname, '..', 'bin', 'ged145.js');

function startChild(name, args, { readyPattern, timeoutMs = 15_000, env = {} }) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${log}`));
    }, timeoutMs);
    const onData = (d) => {
      log += d;
      const m = readyPattern.exec(log);
      if (m) {
        clearTimeout(timer);
        child.stderr.off('data', onData);
        child.stderr.on('data', (more) => { child.logTail = (child.logTail + more).slice(-20_000); });
        child.logTail = log.slice(-20_000);
        resolve({ child, match: m, pid: child.pid, name });
      }
    };
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before it was ready:\n${log}`));
    });
  });
}

/**
 * startSystem({engine, gatewayArgs, restSimArgs}) -> {target, pids, stop()}.
 * The REST simulator and the gateway each get a process of their own, as in production.
 */
async function startSystem({ engine = 'undici', gatewayArgs = [], restSimArgs = [] } = {}) {
  const sim = await startChild('rest-sim', ['rest-sim', '--port', '0', ...restSimArgs], { readyPattern: /listening on (http:\/\/[\d.]+:\d+)/ });
  let gw;
  try {
    const args = ['gateway', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', sim.match[1], '--engine', engine, '--log-level', 'info'];
    gw = await startChild('gateway', [...args, ...gatewayArgs], {
      readyPattern: /listening for ICM routers on ([\d.]+):(\d+)[\s\S]*admin on http:\/\/[\d.]+:(\d+)/,
    });
  } catch (err) {
    sim.child.kill('SIGKILL');
    throw err;
  }
  const stopOne = (p) => new Promise((resolve) => {
    if (p.child.exitCode !== null) {
      resolve(p.child.exitCode);
      return;
    }
    const t = setTimeout(() => p.child.kill('SIGKILL'), 8000);
    p.child.once('exit', (code) => {
      clearTimeout(t);
      resolve(code);
    });
    p.child.kill('SIGTERM');
  });
  return {
    target: { host: gw.match[1], port: Number(gw.match[2]) },
    adminUrl: `http://127.0.0.1:${gw.match[3]}`,
    backendUrl: sim.match[1],
    pids: { gateway: gw.pid, 'rest-sim': sim.pid },
    gatewayLog: () => gw.child.logTail,
    async stop() {
      const gatewayExit = await stopOne(gw);
      await stopOne(sim);
      return { gatewayExit };
    },
  };
}

module.exports = { startSystem };
