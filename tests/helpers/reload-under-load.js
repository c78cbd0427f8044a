'use strict';

// SIGHUP to a real gateway process while the router simulator sends `count` queries in a closed
// loop (window 8): a good file at a quarter of them, a file that does not parse at half. Every
// query answered exactly once, the session never drops, new queries see the new configuration.
// npm test runs it with 2,000 queries (tests/gateway/ops/reload.test.js), the stress suite with
// 10,000 (tests/stress/reload-under-load.stress.test.js).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Router } = require('../../simulator/router');
const { WireClient } = require('./wire');
const { spawnCli } = require('./spawn');
const { startRestSim } = require('../../rest-sim/server');
const { tmpDir } = require('./tmp');
const { assertAnsweredOnce } = require('./answered');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

async function reloadUnderLoad(count) {
  const sim = await startRestSim({ port: 0 });
  const file = path.join(tmpDir(), 'gateway.json');
  const write = (c) => fs.writeFileSync(file, JSON.stringify({ backend: { url: sim.url }, ...c }));
  write({});
  const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json']);
  try {
    const { port } = await gw.ready();
    const router = new Router({ targets: [{ host: '127.0.0.1', port: Number(port) }], seed: 4, templates: [{ subtype: 'echo', vars: { 1: 'v{seq}' } }] });
    await router.start();
    const load = router.runClosedLoop({ window: 8, count });
    while (router.stats.sent < count / 4) await wait(5);
    write({ fallback: { vars: { 9: 'reloaded' } } });
    gw.kill('SIGHUP');
    await gw.waitFor(/configuration reloaded; router sessions stay connected/);
    while (router.stats.sent < count / 2) await wait(5);
    fs.writeFileSync(file, '{ "backend": ');
    gw.kill('SIGHUP');
    await gw.waitFor(/reload refused, the running configuration stays in force: config: .* is not valid JSON/);
    await load;
    const s = await router.stop();
    assertAnsweredOnce(s, count);
    assert.equal(s.reconnects, 0, 'the session stayed up through both reloads');
    // The reloaded config is in force: a failing subtype now gets the fallback.
    const c = await WireClient.connect(Number(port));
    await c.open();
    c.query(7, { subtype: 'fail' });
    const r = await c.waitFor((m) => m.invokeId === 7);
    assert.deepEqual([r.type, r.status, r.vars], ['QUERY_RESP', 0, { 9: 'reloaded' }]);
    c.close();
    return s;
  } finally {
    gw.kill('SIGTERM');
    await gw.exited;
    await sim.close();
  }
}

module.exports = { reloadUnderLoad };
