'use strict';

// Starts the REST simulator and the gateway as child processes on free ports (what a suite runs
// against by default), and stops them. Each says where it listens with its --ready-json line (lib/child.js).

const { startChild } = require('../lib/child');

/**
 * startSystem({engine, gatewayArgs, restSimArgs}) -> {target, pids, stop()}.
 * The REST simulator and the gateway each get a process of their own, as in production.
 */
async function startSystem({ engine = 'undici', gatewayArgs = [], restSimArgs = [] } = {}) {
  const sim = await startChild({ cli: ['rest-sim', '--port', '0', ...restSimArgs], timeoutMs: 15_000 });
  let gw;
  try {
    const args = ['gateway', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', sim.ready.url, '--engine', engine, '--log-level', 'info'];
    gw = await startChild({ cli: [...args, ...gatewayArgs], timeoutMs: 15_000 });
  } catch (err) {
    sim.child.kill('SIGKILL');
    throw err;
  }
  return {
    target: { host: gw.ready.host, port: gw.ready.port },
    adminUrl: `http://127.0.0.1:${gw.ready.adminPort}`,
    backendUrl: sim.ready.url,
    pids: { gateway: gw.pid, 'rest-sim': sim.pid },
    gatewayLog: () => gw.logTail(),
    async stop() {
      const gatewayExit = await gw.stop();
      await sim.stop();
      return { gatewayExit };
    },
  };
}

module.exports = { startSystem };
