'use strict';

// A real gateway process whose subtype "careless" is tests/fixtures/handlers/careless.js (a handler
// with the bugs users write), the REST simulator for the rest, and routers that must lose nothing.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { Router } = require('../../simulator/router');
const { spawnCli } = require('./spawn');
const { tmpDir } = require('./tmp');

const CARELESS = path.join(__dirname, '..', 'fixtures', 'handlers', 'careless.js');
const CALLER = '5551234567';
const ESCAPING = ['unawaited', 'timer', 'emitter', 'microtask'];

/** An origin that refuses connections: a port that was just free. */
async function deadUrl() {
  const s = net.createServer();
  await new Promise((r) => { s.listen(0, '127.0.0.1', r); });
  const { port } = s.address();
  await new Promise((r) => { s.close(r); });
  return `http://127.0.0.1:${port}/`;
}

/** A gateway process with the careless handler on subtype "careless" and the REST simulator for the rest. */
async function startGatewayProcess(sim, extraArgs = []) {
  const file = path.join(tmpDir(), 'gateway.json');
  fs.writeFileSync(file, JSON.stringify({ backend: { url: sim.url }, log: { redact: true }, routes: { careless: { module: CARELESS } } }));
  const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json', ...extraArgs], {
    env: { CARELESS_DEAD_URL: await deadUrl() },
  });
  const ready = await gw.ready();
  gw.port = Number(ready.port);
  gw.admin = async (p) => {
    const res = await fetch(`http://127.0.0.1:${ready.adminPort}${p}`);
    return p === '/metrics' ? res.text() : res.json();
  };
  return gw;
}

/** Three routers, each its own session, pipelining REST queries and handler queries that take 20 ms. */
function healthyRouters(port) {
  return [1, 2, 3].map((seed) => new Router({
    targets: [{ host: '127.0.0.1', port }],
    seed,
    templates: [{ subtype: 'echo', vars: { 1: 'v{seq}' } }, { subtype: 'careless', ced: 'slow', clid: CALLER }],
  }));
}

function assertEveryQueryAnswered(summary, who) {
  assert.equal(summary.answered, summary.sent, `${who}: ${JSON.stringify(summary)}`);
  assert.deepEqual([summary.timeout, summary.lost, summary.reconnects], [0, 0, 0], `${who}: ${JSON.stringify(summary)}`);
  assert.deepEqual(summary.violations, {}, `${who}: no duplicate or unexpected reply`);
  assert.deepEqual(summary.failures, {}, `${who}: every query answered QUERY_RESP`);
}

module.exports = {
  CARELESS, CALLER, ESCAPING, startGatewayProcess, healthyRouters, assertEveryQueryAnswered,
};
