'use strict';

// One runtime shape (gateway/ops/runtime.js): a gateway that is one process (ProcessRuntime) and a
// cluster's primary with two workers (ClusterPrimary) answer the same calls, start, reload,
// refused, restart, snapshot, stop, with what /status shows after each. Each runs in a real child
// process (node:cluster forks real workers from it), listening on 127.0.0.1, its admin port asked
// over HTTP.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { tmpDir } = require('../../helpers/tmp');
const { spawnCli } = require('../../helpers/spawn');

const ROOT = path.join(__dirname, '..', '..', '..');
const req = (...p) => JSON.stringify(path.join(ROOT, ...p));

/** Starts the runtime for `workers` in a child, calls the five, prints what it saw as one JSON line. */
async function exercise(workers) {
  const script = `
    const cluster = require('node:cluster');
    const http = require('node:http');
    const { loadConfig } = require(${req('gateway', 'config')});
    const { startGateway } = require(${req('gateway')});
    const { startCluster } = require(${req('gateway', 'ops', 'cluster')});
    const get = (port, p) => new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: p }, (res) => {
        let body = '';
        res.on('data', (d) => { body += d; });
        res.on('end', () => resolve(JSON.parse(body)));
      }).on('error', reject);
    });
    const overrides = {
      host: '127.0.0.1', port: 0, 'admin.port': 0, 'backend.url': 'http://127.0.0.1:9', warmup: false,
      workers: ${workers}, 'log.level': 'warn',
    };
    const listeners = () => cluster.listenerCount('message') + cluster.listenerCount('exit');
    (async () => {
      const out = { listenersBefore: listeners() };
      const runtime = await (${workers} > 1 ? startCluster : startGateway)(loadConfig({ env: {}, overrides }), {});
      out.listenersRunning = listeners();
      out.calls = ['start', 'reload', 'refused', 'restart', 'snapshot', 'stop'].filter((m) => typeof runtime[m] === 'function');
      out.listening = runtime.port > 0 && runtime.adminPort > 0;
      const pids = (s) => s.processes.filter((p) => p.role === 'gateway').map((p) => p.pid).sort();
      const first = await runtime.snapshot();
      out.adminStatus = (await get(runtime.adminPort, '/status')).listener.port === runtime.port;
      const next = loadConfig({ env: {}, overrides: { ...overrides, deadlineMs: 250, port: runtime.port + 1 } });
      const reloaded = await runtime.reload(next);
      out.reload = { ok: reloaded.ok, restartNeeded: reloaded.restartNeeded };
      const afterReload = await runtime.snapshot();
      out.listener = { deadlineMs: afterReload.listener.deadlineMs, samePort: afterReload.listener.port === runtime.port };
      out.lastReload = afterReload.config.lastReload.ok;
      runtime.refused('the file did not validate');
      const { lastReload } = (await get(runtime.adminPort, '/status')).config;
      out.refused = { ok: lastReload.ok, error: lastReload.error };
      await runtime.restart();
      const replaced = pids(await runtime.snapshot());
      out.restart = { before: pids(first).length, after: replaced.length, replaced: pids(first).every((p) => !replaced.includes(p)) };
      await runtime.stop('test over');
      out.listenersAfter = listeners();
      console.log('RESULT ' + JSON.stringify(out));
      // Nothing is left to keep the process: it ends by itself, which also shows that stop() let go of everything.
    })().catch((err) => { console.error(err); process.exitCode = 1; });
  `;
  // A file, not node -e: a cluster worker is forked with the primary's node options, -e among them.
  const file = path.join(tmpDir('ged145-runtime-'), 'runtime.js');
  fs.writeFileSync(file, script);
  const child = spawnCli([], { cmdArgs: [file] });
  const { code } = await child.exited;
  const output = child.out + child.err;
  assert.equal(code, 0, output);
  const line = /RESULT (.*)/.exec(output);
  assert.ok(line, output);
  return { result: JSON.parse(line[1]), output };
}

describe('the runtime shape: one process and a cluster primary answer the same calls', function () {
  this.timeout(60_000);

  const same = (result) => {
    assert.deepEqual(result.calls, ['start', 'reload', 'refused', 'restart', 'snapshot', 'stop']);
    assert.equal(result.listening, true);
    assert.equal(result.adminStatus, true, 'the admin port\'s /status is the runtime\'s snapshot');
    assert.deepEqual(result.reload, { ok: true, restartNeeded: ['port'] });
    assert.deepEqual(result.listener, { deadlineMs: 250, samePort: true }, 'the new deadline applies, the port waits for a restart');
    assert.equal(result.lastReload, true);
    assert.deepEqual(result.refused, { ok: false, error: 'the file did not validate' });
  };

  it('one process: the five calls; restart() keeps the process and says why', async () => {
    const { result, output } = await exercise(1);
    same(result);
    assert.deepEqual(result.restart, { before: 1, after: 1, replaced: false });
    assert.match(output, /SIGUSR2 asks for a rolling restart, which needs --workers 2 or more/);
    assert.deepEqual([result.listenersBefore, result.listenersRunning, result.listenersAfter], [0, 0, 0]);
  });

  it('a cluster primary with 2 workers: the five calls; restart() replaces both workers; one message and one exit listener from start to stop', async () => {
    const { result } = await exercise(2);
    same(result);
    assert.deepEqual(result.restart, { before: 2, after: 2, replaced: true });
    assert.deepEqual([result.listenersBefore, result.listenersRunning, result.listenersAfter], [0, 2, 0]);
  });
});

describe('the runtime records how each reload went, in one place', () => {
  const { Runtime } = require('../../../gateway/ops/runtime');

  /** A runtime whose apply() goes as `apply` says, its status() a gateway's bare view. */
  class Probe extends Runtime {
    constructor(apply) {
      super({}, { log: { error: (line) => this.lines.push(line) } });
      this.lines = [];
      this.apply = apply;
    }

    async status() {
      return { config: { file: null, workers: 1 }, listener: {} };
    }
  }

  it('a reload that applies, one refused before it, and one whose apply() throws are each on /status as they went', async () => {
    const runtime = new Probe(async () => ({ at: 'then', ok: true, restartNeeded: [] }));
    assert.equal((await runtime.snapshot()).config.lastReload, null, 'no reload yet');
    assert.deepEqual(await runtime.reload({}), { at: 'then', ok: true, restartNeeded: [] });
    assert.deepEqual((await runtime.snapshot()).config, { file: null, workers: 1, lastReload: { at: 'then', ok: true, restartNeeded: [] } });

    runtime.refused('the file did not validate');
    assert.deepEqual(pick((await runtime.snapshot()).config.lastReload), { ok: false, error: 'the file did not validate' });

    runtime.apply = async () => { throw new Error('log file /x cannot be opened for writing: EACCES'); };
    const failed = await runtime.reload({});
    assert.deepEqual(pick(failed), { ok: false, error: 'log file /x cannot be opened for writing: EACCES' });
    assert.deepEqual((await runtime.snapshot()).config.lastReload, failed, 'the failure, not the reload before it');
    assert.match(runtime.lines.join('\n'), /reload failed, the running configuration stays in force: log file \/x/);
    assert.ok(!Number.isNaN(Date.parse(failed.at)), failed.at);
  });

  const pick = ({ ok, error }) => ({ ok, error });
});
