'use strict';

// --workers 2 behaves as one gateway: one configuration across workers, a reload during
// a worker's warm-up not lost, a worker that does not answer named on /health and /status while
// /metrics answers without it, and counters summed over workers that never go down. Real
// processes: the CLI's primary, its workers, SIGKILL and SIGSTOP.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { WireClient } = require('../helpers/wire');
const { spawnCli } = require('../helpers/spawn');
const { startTestBackend } = require('../helpers/stack');
const { tmpDir } = require('../helpers/tmp');
const { restartUnderLoad, queriesAfterClose } = require('../helpers/restart-load');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** A backend answering {"vars": {"1": name}}. */
const named = (name) => startTestBackend((req, res) => res.end(JSON.stringify({ vars: { 1: name } })));

async function json(adminPort, what) {
  const res = await fetch(`http://127.0.0.1:${adminPort}/${what}`, { signal: AbortSignal.timeout(4000) });
  return res.json();
}

/** The pids of the workers, once all of them answer /health with a pid other than `not`. */
async function workersAnswering(adminPort, { not = null, ms = 20_000 } = {}) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const health = await json(adminPort, 'health').catch(() => null);
    if (health && health.status === 'ok' && health.workers.length === 2 && !health.workers.some((w) => w.pid === not)) {
      return health.workers.map((w) => w.pid);
    }
    await wait(100);
  }
  throw new Error('the workers did not all answer');
}

/** `n` connections, each opened (protocol version 2) and asked one query: the vars.1 of each answer. */
const answers = (port, n) => answersOf(port, n, 's');

async function answersOf(port, n, subtype) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const c = await WireClient.connect(port);
    try {
      const open = await c.open();
      assert.equal(open.type, 'OPEN_CONF', `connection ${i}: ${JSON.stringify(open)}`);
      c.query(7, { subtype, clid: '5550001' });
      const r = await c.waitFor((m) => m.invokeId === 7);
      out.push(r.vars ? r.vars[1] : `status ${r.status}`);
    } finally {
      c.close();
    }
  }
  return out;
}

async function queriesTotal(adminPort) {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`, { signal: AbortSignal.timeout(4000) })).text();
  let sum = 0;
  for (const m of text.matchAll(/^ged145_queries_total\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
  return sum;
}

describe('--workers 2: one gateway', function () {
  this.timeout(90_000);
  const cleanup = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function start(settings) {
    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify(settings));
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--workers', '2', '--ready-json']);
    cleanup.push(async () => {
      gw.kill('SIGTERM');
      await gw.exited;
    });
    const { port, adminPort } = await gw.ready();
    await gw.waitFor(/2 workers listening for ICM routers/);
    return {
      gw, file, port: Number(port), adminPort: Number(adminPort),
    };
  }

  it('a reload during a restarted worker\'s warm-up reaches it; a restart-only setting stays as started, in the new worker too', async () => {
    const a = await named('A');
    const b = await named('B');
    cleanup.push(() => a.close(), () => b.close());
    const {
      gw, file, port, adminPort,
    } = await start({ backend: { url: a.url } });
    const [first] = await workersAnswering(adminPort);
    // The new settings change the backend, and the protocol versions, which need a restart.
    fs.writeFileSync(file, JSON.stringify({ backend: { url: b.url }, protocol: { versions: [3] } }));
    process.kill(first, 'SIGKILL');
    await gw.waitFor(new RegExp(`worker ${first} exited \\(SIGKILL\\); starting another`));
    gw.kill('SIGHUP'); // the new worker is still warming up: it has no ear for this yet
    await gw.waitFor(/configuration generation 1 applied by the worker/); // the one that is up; the new one gets it when ready
    await gw.waitFor(/reload: protocol changed and will apply only after a restart/);
    await workersAnswering(adminPort, { not: first });
    const got = await answers(port, 8);
    assert.deepEqual(got, Array(8).fill('B'), 'every connection on the reloaded backend, and opened with version 2');
    const status = await json(adminPort, 'status');
    assert.equal(status.config.generation, 1);
    assert.deepEqual(status.config.lastReload.restartNeeded, ['protocol']);
  });

  it('a handler rewritten 0-16 ms after each of 12 SIGHUPs: ok only when both workers run the generation, and they never split', async () => {
    const a = await named('A');
    cleanup.push(() => a.close());
    const dir = tmpDir();
    const handler = path.join(dir, 'handler.js');
    const source = (v) => `// ${'padding so that a write takes two steps '.repeat(200)}\nmodule.exports = async () => ({ vars: { 1: 'v${v}' } });\n`;
    fs.writeFileSync(handler, source(0));
    const { gw, port, adminPort } = await start({ backend: { url: a.url }, routes: { h: { module: handler } } });
    await workersAnswering(adminPort);
    let ok = 0;
    let failed = 0;
    for (let v = 1; v <= 12; v++) {
      const last = (await json(adminPort, 'status')).config.lastReload;
      gw.kill('SIGHUP');
      await wait((v * 7) % 17); // 0..16 ms after the signal
      // Written as an editor or a copy does it: truncated, half, then whole.
      const text = source(v);
      const fd = fs.openSync(handler, 'w');
      fs.writeSync(fd, text.slice(0, text.length / 2));
      await wait(3);
      fs.writeSync(fd, text.slice(text.length / 2));
      fs.closeSync(fd);
      let status;
      const until = Date.now() + 20_000;
      do {
        await wait(100);
        status = await json(adminPort, 'status');
      } while (JSON.stringify(status.config.lastReload) === JSON.stringify(last) && Date.now() < until);
      const { lastReload, generation, generations } = status.config;
      assert.ok(lastReload !== null && lastReload.at !== (last && last.at), `reload ${v} reported`);
      if (lastReload.ok) ok++;
      else failed++;
      assert.deepEqual(generations.map((g) => g.generation), [generation, generation], `reload ${v}: no split (${JSON.stringify(status.config)})`);
      const got = await answersOf(port, 6, 'h');
      assert.equal(new Set(got).size, 1, `reload ${v}: every worker runs the same handler: ${got}`);
      if (lastReload.ok) assert.ok(Number(got[0].slice(1)) >= v - 1, `reload ${v}: ${got[0]}`);
    }
    assert.equal(ok + failed, 12);
    process.stdout.write(`      12 reloads with the handler rewritten 0-16 ms after SIGHUP: ${ok} ok, ${failed} reported failed, 0 split\n`);
  });

  it('a stopped worker: /health names it within 4 s, /metrics and /status answer without it; summed counters never go down', async () => {
    const a = await named('A');
    cleanup.push(() => a.close());
    const { gw, port, adminPort } = await start({ backend: { url: a.url } });
    const pids = await workersAnswering(adminPort);
    assert.deepEqual(await answers(port, 10), Array(10).fill('A'));
    const before = await queriesTotal(adminPort);
    assert.equal(before, 10);

    process.kill(pids[0], 'SIGSTOP');
    cleanup.push(() => {
      try { process.kill(pids[0], 'SIGCONT'); } catch { /* gone */ }
    });
    let t0 = Date.now();
    const health = await json(adminPort, 'health');
    assert.ok(Date.now() - t0 < 4000, `/health in ${Date.now() - t0} ms`);
    assert.equal(health.status, 'degraded');
    assert.deepEqual(health.workers.find((w) => w.pid === pids[0]), { pid: pids[0], answering: false, error: 'no answer within 2 s' });
    t0 = Date.now();
    assert.equal(await queriesTotal(adminPort), 10, 'the stopped worker counts with its last values');
    assert.ok(Date.now() - t0 < 4000, `/metrics in ${Date.now() - t0} ms`);
    const status = await json(adminPort, 'status');
    assert.deepEqual(status.processes.filter((p) => p.answering === false).map((p) => p.pid), [pids[0]]);
    await gw.waitFor(new RegExp(`worker ${pids[0]} did not answer within 2 s`));

    // It dies: its counts stay in the sum, and the new worker's add to them.
    process.kill(pids[0], 'SIGKILL');
    await gw.waitFor(new RegExp(`worker ${pids[0]} exited \\(SIGKILL\\); starting another`));
    await workersAnswering(adminPort, { not: pids[0] });
    assert.equal(await queriesTotal(adminPort), 10, 'a counter summed over workers does not go down when one exits');
    await answers(port, 4);
    assert.equal(await queriesTotal(adminPort), 14);
  });

  it('a rolling restart (SIGUSR2) under 200 queries/s on one router side: 99 % answered in time, the session back at once', async () => {
    const a = await named('A');
    cleanup.push(() => a.close());
    const { gw, port, adminPort } = await start({ backend: { url: a.url } });
    const before = await workersAnswering(adminPort);
    const { s, scheduled, figures } = await restartUnderLoad(port, [{ subtype: 's', clid: '555{seq}' }], async () => {
      gw.kill('SIGUSR2');
      await gw.waitFor(/rolling restart done: 2 workers replaced/, 30_000);
    });
    assert.equal(scheduled, 1800, figures);
    assert.ok(s.ok >= 0.99 * scheduled, `at least 99 % answered in time: ${figures}`);
    assert.equal(s.late, 0, figures);
    assert.ok(s.reconnects >= 1, `the drain moved the session: ${figures}`);
    // A session the host closes can lose only what the router sent before our FIN reached it
    // (TCP cannot answer after FIN): each worker counts those on its close line. None it read is lost.
    assert.equal(s.lost, queriesAfterClose(gw.out + gw.err), `lost only after our FIN: ${figures}`);
    const after = await workersAnswering(adminPort);
    assert.equal(after.filter((pid) => before.includes(pid)).length, 0, 'both workers are new processes');
    assert.match(gw.out + gw.err, /rolling restart: worker \d+ \(version \d+\.\d+\.\d+\) took over from worker \d+/);
  });

  it('a rolling restart whose new worker cannot start stops there, and the old workers keep serving', async () => {
    const a = await named('A');
    cleanup.push(() => a.close());
    const dir = tmpDir();
    // The handler's entry file is the running generation's text, handed to every new worker (a
    // rolling restart runs the configuration in force); what it requires is read from disk by each.
    const handler = path.join(dir, 'handler.js');
    const part = path.join(dir, 'answer.js');
    fs.writeFileSync(part, 'module.exports = "A";');
    fs.writeFileSync(handler, 'const name = require("./answer"); module.exports = async () => ({ vars: { 1: name } });');
    const {
      gw, port, adminPort,
    } = await start({ backend: { url: a.url }, routes: { h: { module: handler } } });
    const before = await workersAnswering(adminPort);
    fs.writeFileSync(part, 'module.exports = "B'); // a release of the module it requires that does not load
    gw.kill('SIGUSR2');
    await gw.waitFor(/rolling restart stopped: a new worker did not start: .*; 2 workers of the old code keep serving/, 30_000);
    assert.deepEqual((await workersAnswering(adminPort)).sort(), before.sort());
    assert.deepEqual(await answers(port, 2), ['A', 'A']);
  });
});
