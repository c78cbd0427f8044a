'use strict';

// Reload without dropping the router: SIGHUP to a real gateway process under load, with the
// router simulator counting every reply; and Gateway.reload in-process for what it keeps.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { spawnCli } = require('../../helpers/spawn');
const { startStack } = require('../../helpers/stack');
const { startRestSim } = require('../../../rest-sim/server');
const { loadConfig } = require('../../../gateway/config');
const { tmpDir } = require('../../helpers/tmp');
const { reloadUnderLoad } = require('../../helpers/reload-under-load');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

describe('reload (SIGHUP)', function () {
  this.timeout(60_000);

  it('under load (2,000 queries): every query answered exactly once, the session stays up, new queries see the new config; a bad file is refused', async () => {
    // 10,000 queries: tests/stress/reload-under-load.stress.test.js.
    await reloadUnderLoad(2000);
  });

  it('with --workers 2: the primary validates once and every worker applies the new settings', async () => {
    const sim = await startRestSim({ port: 0 });
    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: sim.url } }));
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--workers', '2', '--ready-json']);
    try {
      const { port } = await gw.ready();
      await gw.waitFor(/2 workers listening for ICM routers/);
      fs.writeFileSync(file, JSON.stringify({ backend: { url: sim.url }, fallback: { vars: { 9: 'workers' } } }));
      gw.kill('SIGHUP');
      await gw.waitFor(/configuration generation 1 applied by all 2 workers/);
      assert.equal((gw.out + gw.err).split('configuration reloaded').length - 1, 2, 'both workers reloaded before the primary said so');
      // Whichever worker takes the connection, the new fallback is in force.
      for (let i = 0; i < 4; i++) {
        const c = await WireClient.connect(Number(port));
        await c.open();
        c.query(7, { subtype: 'fail' });
        const r = await c.waitFor((m) => m.invokeId === 7);
        assert.deepEqual([r.status, r.vars], [0, { 9: 'workers' }]);
        c.close();
      }
      fs.writeFileSync(file, JSON.stringify({ backend: { url: sim.url }, limits: { maxInFlight: 0 } }));
      gw.kill('SIGHUP');
      await gw.waitFor(/reload refused, the running configuration stays in force: config: limits\.maxInFlight/);
      assert.doesNotMatch(gw.out + gw.err, /generation 2/, 'a refused file is not sent');
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
      await sim.close();
    }
  });

  it('in process: queries in flight finish under the old settings; settings that need a restart are named', async () => {
    const stack = await startStack({ gateway: { deadlineMs: 2000 } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      c.query(11, { subtype: 'slow', vars: { 1: '300' } }); // the REST simulator answers after 300 ms
      await wait(50);
      const next = loadConfig({
        env: {}, overrides: { host: '127.0.0.1', port: 5999, 'backend.url': 'http://127.0.0.1:1', warmup: false, 'admin.port': 0 },
      });
      const restart = stack.gateway.reload(next);
      assert.deepEqual(restart, ['port']);
      assert.ok(stack.log.lines.some((l) => /reload: port changed and will apply only after a restart/.test(l.message)));
      const old = await c.waitFor((m) => m.invokeId === 11);
      assert.equal(old.status, 0, 'the query in flight used the backend it started with');
      c.query(12, { subtype: 'echo' });
      const fresh = await c.waitFor((m) => m.invokeId === 12);
      assert.equal(fresh.status, STATUS.E_AG_HOST_ERROR1, 'a new query goes to the new (dead) backend');
    } finally {
      c.close();
      await stack.stop();
    }
  });

  // --embedded-backend logs its warning after the signal handlers are in place and before the
  // gateway's own start (the warm-up, about a second), so a signal sent on it lands mid-start.
  const startingGateway = () => spawnCli(['gateway', '--embedded-backend', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0']);

  it('a SIGHUP during the start does not kill the gateway: the reload is applied once it has started', async () => {
    const gw = startingGateway();
    try {
      await gw.waitFor(/serving from the built-in REST simulator/, 20_000);
      gw.kill('SIGHUP');
      await gw.waitFor(/listening for ICM routers[\s\S]*configuration reloaded/, 20_000);
      assert.equal(gw.exitCode, null);
      assert.equal(gw.signalCode, null);
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
    }
  });

  it('a SIGTERM during the start stops the gateway cleanly once it has started', async () => {
    const gw = startingGateway();
    await gw.waitFor(/serving from the built-in REST simulator/, 20_000);
    gw.kill('SIGTERM');
    assert.deepEqual(await gw.exited, { code: 0, signal: null });
    assert.match(gw.out + gw.err, /listening for ICM routers/);
  });
});
