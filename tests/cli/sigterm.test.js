'use strict';

// A SIGTERM under load, as users run it: rest-sim, gateway and router as three real processes on
// 127.0.0.1. Every query the gateway read is answered before it exits 0; the router counts each
// answer once. Listed in tests/timing.js: 400 queries/s through three processes is timing, and
// runs with nothing beside it.

const assert = require('node:assert/strict');
const { spawnSimAndGateway } = require('../helpers/spawn');
const { Router } = require('../../simulator/router');

describe('ged145 CLI: rest-sim + gateway + router as three processes, stopped under load', () => {
  let gw;
  let kill = () => {};
  before(async () => { ({ gw, kill } = await spawnSimAndGateway()); });
  after(() => kill());

  it('SIGTERM under load: every query the gateway read is answered, then it exits 0', async () => {
    const router = new Router({ targets: [{ host: '127.0.0.1', port: gw.port }], settings: { sessionRetryMs: 60_000 }, seed: 9 });
    await router.start();
    const load = router.runOpenLoop({ rate: 400, durationMs: 1500 });
    setTimeout(() => gw.kill('SIGTERM'), 700);
    await load;
    const { code } = await gw.exited;
    const s = await router.stop({ drainMs: 100 });
    assert.equal(code, 0, gw.err);
    const line = [...gw.err.matchAll(/router disconnected .*queries=(\d+) ok=(\d+) failed=(\d+)/g)].at(-1);
    assert.ok(line, gw.err);
    const [, read, ok, failed] = line.map(Number);
    assert.equal(ok + failed, read, 'the gateway answered every query it read');
    assert.equal(s.answered, read, `the router received exactly those answers\n${gw.err}`);
    assert.equal(s.violationCount || Object.keys(s.violations).length, 0);
    assert.equal((s.failures.E_AG_HOST_OFFLINE || 0) + s.ok, s.answered, `answered, or refused as the host goes offline: ${JSON.stringify(s.failures)}`);
    assert.match(line[0], /abandonedQueries=0/);
  });
});
