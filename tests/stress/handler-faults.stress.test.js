'use strict';

// The full size of tests/gateway/backend/handler-faults.test.js's cluster case: --workers 2 for 30 s, one
// handler query whose error escapes every 2 s (a ctx.request not awaited to a dead origin, or a
// throw in the handler's timer), a healthy router at 50 queries/s: no worker dies, every query of
// the healthy router is answered.

const assert = require('node:assert/strict');
const { Router } = require('../../simulator/router');
const { WireClient } = require('../helpers/wire');
const { startRestSim } = require('../../rest-sim/server');
const {
  startGatewayProcess, assertEveryQueryAnswered, ESCAPING, CALLER,
} = require('../helpers/careless');

const wait = (ms) => new Promise((r) => { setTimeout(r, ms); });

describe('a handler module\'s bugs (stress)', function () {
  this.timeout(120_000);

  it('--workers 2, one escaping handler query every 2 s for 30 s: no worker dies, the healthy router gets every answer', async () => {
    const sim = await startRestSim({ port: 0 });
    const gw = await startGatewayProcess(sim, ['--workers', '2']);
    const router = new Router({ targets: [{ host: '127.0.0.1', port: gw.port }], seed: 11, templates: [{ subtype: 'echo' }] });
    try {
      await gw.waitFor(/2 workers listening/);
      const pids = (await gw.admin('/status')).processes.map((p) => p.pid).sort();
      await router.start();
      const load = router.runOpenLoop({ rate: 50, durationMs: 30_000 });
      for (let i = 0; i < 15; i++) {
        const c = await WireClient.connect(gw.port);
        await c.open();
        c.query(2, { subtype: 'careless', ced: ESCAPING[i % 2], clid: CALLER });
        assert.equal((await c.waitFor((m) => m.invokeId === 2)).status, 0);
        c.close();
        await wait(2000);
      }
      await load;
      const summary = await router.stop();
      assertEveryQueryAnswered(summary, 'the healthy router');
      assert.ok(summary.sent >= 1400, `${summary.sent} sent`);
      const status = await gw.admin('/status');
      assert.deepEqual(status.processes.map((p) => p.pid).sort(), pids, 'the same processes: no worker died');
      assert.equal(status.handlers.careless.escaped, 15);
      process.stdout.write(`      healthy router: ${summary.answered} of ${summary.sent} answered; pids ${pids.join(', ')} unchanged; 15 escaped errors\n`);
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
      await sim.close();
    }
  });
});
