'use strict';

// A reload with workers is all or nothing, even when the handler module is rewritten while it
// runs: 12 SIGHUPs, each followed 0 to 16 ms later by a new version of the handler file. Each
// reload is either ok, every worker on the new generation answering from one version, or refused,
// every worker on the one before answering from the version before. Real processes and sockets.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { WireClient } = require('../../helpers/wire');
const { spawnCli } = require('../../helpers/spawn');
const { tmpDir } = require('../../helpers/tmp');
const { sourcesPrint } = require('../../../gateway/ops/ipc');

const wait = (ms) => new Promise((r) => { setTimeout(r, ms); });
const json = async (adminPort, what) => (await fetch(`http://127.0.0.1:${adminPort}/${what}`, { signal: AbortSignal.timeout(10_000) })).json();

/** The vars.1 answered to one query on each of n new connections (the workers share them out). */
async function answers(port, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const c = await WireClient.connect(port);
    try {
      await c.open();
      c.query(7, { subtype: 'h' });
      const r = await c.waitFor((m) => m.invokeId === 7);
      out.push(r.vars ? r.vars[1] : `status ${r.status}`);
    } finally {
      c.close();
    }
  }
  return out;
}

/** A handler's source: a version name padded to some kilobytes, so that writing it is not one instant. */
const source = (version) => `// ${'x'.repeat(64 * 1024)}\nmodule.exports = async () => ({ vars: { 1: ${JSON.stringify(version)} } });\n`;

/** /status once it reports a reload other than the one at `previous` (its `at`). */
async function nextReload(adminPort, previous) {
  for (;;) {
    const status = await json(adminPort, 'status');
    if (status.config.lastReload && status.config.lastReload.at !== previous) return status;
    await wait(50);
  }
}

describe('cluster reload: all or nothing while the handler file changes', function () {
  this.timeout(240_000);

  it('12 reloads, the handler rewritten 0-16 ms after each SIGHUP: each is ok on one version or refused on none', async () => {
    const dir = tmpDir();
    const handler = path.join(dir, 'handler.js');
    const file = path.join(dir, 'gateway.json');
    fs.writeFileSync(handler, source('v0'));
    fs.writeFileSync(file, JSON.stringify({ backend: { url: 'http://127.0.0.1:9' }, routes: { h: { module: handler } } }));
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--workers', '2', '--ready-json']);
    try {
      const { port, adminPort } = await gw.ready();
      await gw.waitFor(/2 workers listening for ICM routers/);
      let running = 'v0';
      let generation = 0;
      let previous = null;
      const seen = { ok: 0, refused: 0 };
      for (let k = 1; k <= 12; k++) {
        fs.writeFileSync(handler, source(`v${k}a`));
        gw.kill('SIGHUP');
        await wait((k * 7) % 17); // 0 to 16 ms
        // Written as an editor or a copy does it: truncated, half, then whole.
        const text = source(`v${k}b`);
        const fd = fs.openSync(handler, 'w');
        fs.writeSync(fd, text.slice(0, text.length / 2));
        await wait(3);
        fs.writeSync(fd, text.slice(text.length / 2));
        fs.closeSync(fd);
        const status = await nextReload(adminPort, previous);
        const { lastReload } = status.config;
        previous = lastReload.at;
        const got = await answers(Number(port), 6);
        const context = `reload ${k}: ${JSON.stringify({ lastReload, generations: status.config.generations, got })}`;
        assert.equal(new Set(got).size, 1, `one version answers: ${context}`);
        if (lastReload.ok) {
          generation += 1;
          seen.ok++;
          assert.ok([`v${k}a`, `v${k}b`].includes(got[0]), context);
          assert.equal(lastReload.handlers, sourcesPrint({ [handler]: source(got[0]) }), `/status names the code that answers: ${context}`);
          assert.doesNotMatch(gw.err, new RegExp(`reload refused \\(generation ${generation}\\)`), `no worker refused what is reported ok: ${context}`);
          running = got[0];
        } else {
          seen.refused++;
          assert.ok(lastReload.error, `a refusal says why: ${context}`);
          assert.equal(got[0], running, `refused: the version before answers: ${context}`);
        }
        assert.equal(status.config.generation, generation, context);
        assert.deepEqual(status.config.generations.map((g) => g.generation), [generation, generation], `no split: ${context}`);
        assert.deepEqual(status.processes.filter((p) => p.role === 'gateway').map((p) => p.generation), [generation, generation], context);
      }
      assert.ok(seen.ok >= 1, JSON.stringify(seen));
      assert.equal(seen.ok + seen.refused, 12);

      // The file changes with no SIGHUP, then a rolling restart: the new workers run the running
      // generation's code, not what the file holds now.
      fs.writeFileSync(handler, source('not reloaded'));
      gw.kill('SIGUSR2');
      await gw.waitFor(/rolling restart done/, 60_000);
      assert.deepEqual(await answers(Number(port), 6), Array(6).fill(running), 'the running generation, on new workers too');
      const after = await json(adminPort, 'status');
      assert.deepEqual(after.config.generations.map((g) => g.generation), [generation, generation]);
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
    }
  });
});
