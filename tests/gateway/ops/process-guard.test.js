'use strict';

// What a gateway process does with an error nothing caught (gateway/ops/process-guard.js), in real
// child processes: a handler's is logged and the process goes on; an unhandled rejection of ours
// is logged with its stack and the process goes on; an uncaught exception of ours is logged with
// its stack and the process exits 1, to be started afresh by systemd or the cluster primary.

const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnCli } = require('../../helpers/spawn');

const ROOT = path.join(__dirname, '..', '..', '..');

/** Runs `body` in a node process whose errors the guard handles; resolves {code, out}. */
async function guarded(body) {
  const script = `
    const { createLogger } = require(${JSON.stringify(path.join(ROOT, 'lib', 'logger'))});
    const { guardProcess } = require(${JSON.stringify(path.join(ROOT, 'gateway', 'ops', 'process-guard'))});
    const { HandlerFaults, handlerScope, runAs } = require(${JSON.stringify(path.join(ROOT, 'gateway', 'backend', 'user-code'))});
    const log = createLogger({ component: 'test' });
    guardProcess(log);
    const faults = new HandlerFaults({ log });
    const scope = handlerScope('cust', { file: '/srv/handlers/cust.js' }, faults, true);
    ${body}
  `;
  const child = spawnCli([], { cmdArgs: ['-e', script] });
  const { code } = await child.exited;
  return { code, out: child.out + child.err };
}

describe('process guard', function () {
  this.timeout(20_000);

  it('a handler\'s uncaught exception and unhandled rejection: logged with the route, caller data hidden; the process goes on', async () => {
    const { code, out } = await guarded(`
      runAs(scope, { clid: '5551234567' }, () => {
        setTimeout(() => { throw new Error('no row for 5551234567'); }, 1);
        Promise.reject(new Error('pool closed'));
      });
      setTimeout(() => { console.log('still here', JSON.stringify(faults.toJSON())); }, 100);
    `);
    assert.equal(code, 0, out);
    assert.match(out, /handler module error escaped its query \(uncaught exception\): no row for \[redacted\]; the gateway goes on subtype=cust/);
    assert.match(out, /escaped its query \(unhandled rejection\): pool closed/);
    assert.match(out, /still here .*"escaped":2/);
    assert.doesNotMatch(out, /5551234567/);
  });

  it('an unhandled rejection of ours: logged with its stack, the process goes on', async () => {
    const { code, out } = await guarded(`
      Promise.reject(new Error('our bug'));
      setTimeout(() => { console.log('still here'); }, 100);
    `);
    assert.equal(code, 0, out);
    assert.match(out, /internal error \(please report it\): a promise rejected with no handler: Error: our bug\\n {4}at /);
    assert.match(out, /still here/);
  });

  it('an uncaught exception of ours: logged with its stack, then exit 1', async () => {
    const { code, out } = await guarded(`
      setTimeout(() => { throw new Error('our broken state'); }, 1);
      setTimeout(() => { console.log('still here'); }, 3000);
    `);
    assert.equal(code, 1, out);
    assert.match(out, /internal error \(please report it\): uncaught exception: Error: our broken state\\n {4}at .*; exiting, to be started afresh/);
    assert.doesNotMatch(out, /still here/);
  });
});
