'use strict';

// A reload (SIGHUP) does what an operator expects of it and reports what it did: with workers, a
// reload one worker refuses is reported failed, named, and applied by none; a renewed certificate
// is served to new connections (real openssl s_client) while an open session stays; a new
// log.file is written from then on; `duplicates` reaches open sessions; /health and
// ged145_backend_up agree. Real processes and sockets.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { STATUS } = require('../../../lib/protocol');
const { Router } = require('../../../simulator/router');
const { WireClient } = require('../../helpers/wire');
const { spawnCli } = require('../../helpers/spawn');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { makeCerts } = require('../../helpers/certs');
const { loadConfig } = require('../../../gateway/config');
const { tmpDir } = require('../../helpers/tmp');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const json = async (adminPort, what) => (await fetch(`http://127.0.0.1:${adminPort}/${what}`, { signal: AbortSignal.timeout(5000) })).json();

/** What `openssl s_client` sees of the certificate the gateway on port serves: its subject line. */
function subjectSeen(port) {
  return new Promise((resolve, reject) => {
    const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost'], { timeout: 10_000 }, (err, out) => {
      const m = /^subject=(.*)$/m.exec(out || '');
      if (m) resolve(m[1]);
      else reject(err || new Error(`no subject in: ${out}`));
    });
    child.stdin.end(); // no input: s_client closes once the handshake is done
  });
}

/** The vars.1 answered to one query on each of n new connections (the workers share them out). */
async function answers(port, n, subtype = 'h') {
  const out = [];
  for (let i = 0; i < n; i++) {
    const c = await WireClient.connect(port);
    try {
      await c.open();
      c.query(7, { subtype });
      const r = await c.waitFor((m) => m.invokeId === 7);
      out.push(r.vars ? r.vars[1] : `status ${r.status}`);
    } finally {
      c.close();
    }
  }
  return out;
}

describe('reload: what it does and what it reports', function () {
  this.timeout(60_000);

  it('with --workers 2: a generation one worker refuses is reported failed, names that worker, and is applied by neither', async () => {
    const dir = tmpDir();
    const handler = path.join(dir, 'handler.js');
    const file = path.join(dir, 'gateway.json');
    fs.writeFileSync(handler, 'module.exports = async () => ({ vars: { 1: "v1" } });');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: 'http://127.0.0.1:9' }, routes: { h: { module: handler } } }));
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--workers', '2', '--ready-json']);
    try {
      const { port, adminPort } = await gw.ready();
      await gw.waitFor(/2 workers listening for ICM routers/);
      const pids = (await json(adminPort, 'health')).workers.map((w) => w.pid);
      assert.equal(pids.length, 2);
      // v2 loads in the primary and in one worker; the other worker refuses it, every time it is asked.
      fs.writeFileSync(handler, `if (process.pid === ${pids[0]}) throw new Error('this worker refuses v2');\n`
        + 'module.exports = async () => ({ vars: { 1: "v2" } });');
      gw.kill('SIGHUP');
      await gw.waitFor(/reload refused by 1 of 2 workers/, 20_000);
      const status = await json(adminPort, 'status');
      assert.equal(status.config.lastReload.ok, false, JSON.stringify(status.config));
      assert.match(status.config.lastReload.error, new RegExp(`worker ${pids[0]}: .*this worker refuses v2`));
      assert.equal(status.config.generation, 0);
      assert.deepEqual(status.config.generations.map((g) => g.generation), [0, 0], 'no split');
      assert.deepEqual(await answers(Number(port), 6), Array(6).fill('v1'), 'both workers answer with the running generation');
      const health = await json(adminPort, 'health');
      assert.equal(health.status, 'ok');

      // A generation both accept: reported ok once both confirmed it, and both answer with it.
      fs.writeFileSync(handler, 'module.exports = async () => ({ vars: { 1: "v3" } });');
      gw.kill('SIGHUP');
      await gw.waitFor(/configuration generation 1 applied by all 2 workers/, 20_000);
      const after = await json(adminPort, 'status');
      assert.deepEqual([after.config.lastReload.ok, after.config.generation], [true, 1]);
      assert.deepEqual(after.config.generations.map((g) => g.generation), [1, 1]);
      assert.deepEqual(after.processes.filter((p) => p.role === 'gateway').map((p) => p.generation), [1, 1]);
      assert.deepEqual(await answers(Number(port), 6), Array(6).fill('v3'));
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
    }
  });

  it('a renewed router-side certificate, then SIGHUP: openssl s_client sees the new subject, the open router session stays and answers', async () => {
    const certs = makeCerts();
    const api = await startTestBackend((req, res) => res.end(JSON.stringify({ vars: { 1: 'x' } })));
    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: api.url }, tls: { cert: certs.serverCert, key: certs.serverKey } }));
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json']);
    try {
      const port = Number((await gw.ready()).port);
      assert.match(await subjectSeen(port), /CN\s*=\s*localhost$/);
      const router = new Router({
        targets: [{ host: '127.0.0.1', port }], tls: { ca: fs.readFileSync(certs.ca), servername: 'localhost' }, seed: 5,
      });
      await router.start();
      const load = router.runClosedLoop({ window: 2, count: 600 });
      while (router.stats.answered < 100) await wait(5);
      certs.renewServer('renewed.localhost');
      gw.kill('SIGHUP');
      await gw.waitFor(/configuration reloaded/);
      assert.match(await subjectSeen(port), /CN\s*=\s*renewed\.localhost$/, 'a new connection gets the renewed certificate');
      await load;
      const s = await router.stop();
      assert.equal(s.answered, 600, JSON.stringify(s));
      assert.equal(s.reconnects, 0, 'the open session kept its connection');
      assert.deepEqual(s.closes, { 'closed by router': 1 });
      assert.doesNotMatch(gw.err, /restart/, 'nothing needs a restart');
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
      await api.close();
      certs.cleanup();
    }
  });

  it('log.file changed on SIGHUP: lines go to the new file from then on; the same file moved away is opened afresh', async () => {
    const dir = tmpDir();
    const first = path.join(dir, 'first.log');
    const second = path.join(dir, 'second.log');
    const file = path.join(dir, 'gateway.json');
    const write = (logFile) => fs.writeFileSync(file, JSON.stringify({ backend: { url: 'http://127.0.0.1:9' }, log: { file: logFile } }));
    write(first);
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json']);
    try {
      const port = Number((await gw.ready()).port);
      const lines = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
      const connects = async () => {
        const c = await WireClient.connect(port);
        await c.open({ config: 'marker' });
        c.close();
      };
      const opened = (f) => lines(f).filter((l) => l.message === 'session opened' && l.connectInfo === 'marker').length;
      await connects();
      await gw.waitFor(/session opened/);
      // The file's line is written after the console's: wait for it, or it lands after `before` is read.
      for (const until = Date.now() + 5000; opened(first) < 1 && Date.now() < until;) await wait(20);
      assert.equal(opened(first), 1, 'the first file has the first line');
      write(second);
      gw.kill('SIGHUP');
      await gw.waitFor(/configuration reloaded/);
      const before = opened(first);
      await connects();
      const until = Date.now() + 5000;
      while (opened(second) < 1 && Date.now() < until) await wait(20);
      assert.equal(opened(second), 1, 'the new file has the line');
      assert.equal(opened(first), before, 'the old file no longer grows');
      assert.doesNotMatch(gw.err, /log changed and will apply only after a restart|restart/);
      // logrotate moved the file: the next SIGHUP writes a new one at the same path.
      fs.renameSync(second, `${second}.1`);
      gw.kill('SIGHUP');
      await gw.waitFor(/configuration reloaded[\s\S]*configuration reloaded/);
      await connects();
      const until2 = Date.now() + 5000;
      while (opened(second) < 1 && Date.now() < until2) await wait(20);
      assert.equal(opened(second), 1, 'a new file at the same path');
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
    }
  });

  it('in process: backend.tls files are read again; new backend requests trust the renewed CA', async () => {
    const https = require('node:https');
    const first = makeCerts();
    const second = makeCerts(); // a new CA, as when the backend's certificate is renewed by another issuer
    const server = https.createServer({ cert: fs.readFileSync(first.serverCert), key: fs.readFileSync(first.serverKey) }, (req, res) => {
      req.resume();
      req.on('end', () => res.end(JSON.stringify({ vars: { 1: 'tls' } })));
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const ca = path.join(tmpDir(), 'backend-ca.pem');
    fs.copyFileSync(first.ca, ca);
    const url = `https://localhost:${server.address().port}`;
    const overrides = {
      host: '127.0.0.1', port: 0, 'admin.port': 0, warmup: false, routerRequestTimeoutMs: 600_000, deadlineMs: 2000, 'backend.url': url, 'backend.tls.ca': ca,
    };
    const stack = await startStack({ backendUrl: url, gateway: { deadlineMs: 2000, 'backend.tls.ca': ca } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open({ invokeId: 100 });
      const ask = async (id) => {
        c.query(id, { subtype: 's' });
        const r = await c.waitFor((m) => m.invokeId === id);
        return r.vars ? r.vars[1] : `status ${r.status}`;
      };
      assert.equal(await ask(1), 'tls');
      server.setSecureContext({ cert: fs.readFileSync(second.serverCert), key: fs.readFileSync(second.serverKey) });
      server.closeAllConnections();
      assert.equal(await ask(2), `status ${STATUS.E_AG_HOST_ERROR1}`, 'the old CA does not trust the renewed certificate');
      fs.copyFileSync(second.ca, ca);
      stack.gateway.reload(loadConfig({ env: {}, overrides }));
      assert.equal(await ask(3), 'tls', 'the renewed CA file is in force for new requests');
    } finally {
      c.close();
      await stack.stop();
      server.closeAllConnections();
      server.close();
      first.cleanup();
      second.cleanup();
    }
  });

  it('in process: `duplicates` reaches an open session; /health and ged145_backend_up agree after a reload', async () => {
    const api = await startTestBackend((req, res) => res.end(JSON.stringify({ vars: { 1: 'backend' } })));
    const stack = await startStack({ backendUrl: api.url, gateway: { deadlineMs: 2000 } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      c.query(101, { subtype: 's', duplicate: true });
      const first = await c.waitFor((m) => m.invokeId === 101);
      assert.deepEqual(first.vars, { 1: 'backend' }, `forwarded: ${JSON.stringify(first)}`);
      const overrides = {
        host: '127.0.0.1', port: 0, 'admin.port': 0, warmup: false, routerRequestTimeoutMs: 600_000, deadlineMs: 2000,
      };
      stack.gateway.reload(loadConfig({ env: {}, overrides: { ...overrides, 'backend.url': api.url, duplicates: 'answer-empty' } }));
      const asked = api.requests.length;
      c.query(102, { subtype: 's', duplicate: true });
      const r = await c.waitFor((m) => m.invokeId === 102);
      assert.deepEqual([r.type, r.status, r.vars], ['QUERY_RESP', STATUS.E_AG_NO_ERROR, undefined], 'answered empty on the same session');
      assert.equal(api.requests.length, asked, 'not sent to the backend');

      // The backend goes away: failing after five queries; a reload to the same backend keeps it so, and the gauge agrees.
      await api.close();
      for (let i = 10; i < 16; i++) {
        c.query(i, { subtype: 's' });
        await c.waitFor((m) => m.invokeId === i);
      }
      const up = async () => Number(/^ged145_backend_up (\d)/m.exec(await stack.gw.metrics())[1]);
      assert.deepEqual([stack.gateway.backend.toJSON().state, await up()], ['failing', 0]);
      stack.gateway.reload(loadConfig({ env: {}, overrides: { ...overrides, 'backend.url': api.url } }));
      const health = await json(stack.adminPort, 'health');
      assert.deepEqual([health.backend.state, await up()], ['failing', 0], 'the same backend, still failing, on both');
      stack.gateway.reload(loadConfig({ env: {}, overrides: { ...overrides, 'backend.url': 'http://127.0.0.1:10' } }));
      const other = await json(stack.adminPort, 'health');
      // Afresh: no query has judged it yet, so it is shown idle, and its verdict is the gauge's.
      assert.deepEqual([other.backend.state, other.backend.lastState, await up()], ['idle', 'reachable', 1], 'another backend starts afresh, on both');
    } finally {
      c.close();
      await stack.stop();
    }
  });
});
