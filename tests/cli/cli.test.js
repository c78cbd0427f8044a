'use strict';

// The one CLI as users run it: real child processes on 127.0.0.1.

const { tmpDir } = require('../helpers/tmp');
const assert = require('node:assert/strict');
const net = require('node:net');
const { spawnCli, runCli, spawnSimAndGateway } = require('../helpers/spawn');
const { WireClient } = require('../helpers/wire');
const { STATUS } = require('../../lib/protocol');
const { makeCerts } = require('../helpers/certs');
const { assertAnsweredOnce } = require('../helpers/answered');

describe('ged145 CLI', () => {
  it('a usage error is one line and a pointer to --help, exit 2', async () => {
    for (const args of [
      ['nope'], ['gateway', '--bogus'], ['router', '--rate', 'fast'], ['rest-sim', '--error-rate', 'x'], ['router', '--sides', 'C'], ['router', '--rate', '-5'],
      ['router', '--rate=-5'], ['gateway', '--port'], ['router', '--late-timeout', '0'], ['router', '--connect-info', 'A=lab,a=lab'],
      ['router', '--connect-info', 'x'.repeat(300)],
    ]) {
      const r = await runCli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
      const lines = r.err.trimEnd().split('\n');
      assert.equal(lines.length, 2, r.err);
      assert.match(lines[1], /^Run 'ged145( \S+)? --help' for the options\.$/);
      assert.ok(!/usage: ged145/.test(r.err), 'not the whole help');
      assert.ok(!/\n\s+at /.test(r.err), `no stack trace: ${r.err}`);
    }
  });

  it('suggests the closest option or command', async () => {
    assert.match((await runCli(['gateway', '--prot', '5'])).err, /unknown option --prot \(did you mean --port\?\)/);
    assert.match((await runCli(['router', '--rat', '5'])).err, /did you mean --rate\?/);
    assert.match((await runCli(['gatway'])).err, /did you mean 'gateway'\?/);
    assert.match((await runCli(['gateway', '--backend-url', 'http://crm'])).err,
      /unknown option --backend-url \(did you mean --backend\? GED145_BACKEND_URL is the environment variable\)/);
    assert.match((await runCli(['run', 'lod'])).err, /unknown suite 'lod' \(did you mean 'load'\?\)/);
    assert.match((await runCli(['run', 'xyzzy'])).err, /unknown suite 'xyzzy'; suites: speed, error, load/);
  });

  it('--version prints the version', async () => {
    const r = await runCli(['--version']);
    assert.equal(r.code, 0);
    assert.equal(r.out.trim(), require('../../package.json').version);
  });

  describe('expected operator errors: one line, exit 1, no stack', () => {
    let certs;
    let dir;
    const fs = require('node:fs');
    const path = require('node:path');
    before(() => {
      certs = makeCerts();
      dir = tmpDir('ged145-cli-');
      fs.writeFileSync(path.join(dir, 'junk.pem'), 'not a certificate\n');
      fs.writeFileSync(path.join(dir, 'missing-module.json'), JSON.stringify({ routes: { x: { module: './no-such-handler.js' } } }));
      fs.writeFileSync(path.join(dir, 'typo.json'), JSON.stringify({ routes: { x: { url: 'http://127.0.0.1:1/x', metod: 'GET' } } }));
    });
    after(() => {
      certs.cleanup();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const gw = ['gateway', '--backend', 'http://127.0.0.1:1', '--port', '0', '--admin-port', '0', '--host', '127.0.0.1'];
    const cases = () => [
      ['a certificate that is not PEM', [...gw, '--tls-cert', path.join(dir, 'junk.pem'), '--tls-key', certs.serverKey], /tls\.cert: .* is not a PEM file/],
      ['a key that does not match the certificate', [...gw, '--tls-cert', certs.serverCert, '--tls-key', certs.clientKey], /the key does not match the certificate/],
      ['a CA that is not PEM', [...gw, '--tls-cert', certs.serverCert, '--tls-key', certs.serverKey, '--tls-ca', path.join(dir, 'junk.pem')], /tls\.ca: .* is not a PEM file/],
      ['--host 999.1.1.1', ['gateway', '--backend', 'http://127.0.0.1:1', '--port', '0', '--admin-port', '0', '--host', '999.1.1.1'], /host '999\.1\.1\.1' is not a valid IPv4 address/],
      ['a missing route module', [...gw, '--config', path.join(dir, 'missing-module.json')], /routes\.x: cannot load module .*no-such-handler\.js: Cannot find module/],
      ['a misspelt route key', [...gw, '--config', path.join(dir, 'typo.json')], /unknown key 'routes\.x\.metod' \(did you mean 'routes\.x\.method'\?\)/],
      ['a log file in a missing directory', [...gw, '--log-file', path.join(dir, 'nope', 'gw.log')], /log file .* cannot be opened for writing: ENOENT \(directory .* does not exist\)/],
      ['a log file under /proc', [...gw, '--log-file', '/proc/ged145-test.log'], /log file \/proc\/ged145-test\.log cannot be opened for writing/],
      ['run against a port where nothing listens', ['run', 'speed', '--target', '127.0.0.1:1'], /no session opened: A 127\.0\.0\.1:1: connect failed: ECONNREFUSED/],
      ['GED145_PORT=abc', ['gateway', '--backend', 'http://127.0.0.1:1'], /GED145_PORT=abc: must be a number/, { GED145_PORT: 'abc' }],
      ['GED145_REDACT=maybe', [...gw], /GED145_REDACT=maybe: must be 1\/0, true\/false, yes\/no or on\/off/, { GED145_REDACT: 'maybe' }],
      ['a deadline at the router\'s RequestTimeout', [...gw, '--deadline', '300'], /deadlineMs \(300\) must be below the router's RequestTimeout/],
    ];
    it('each is refused with one line naming the cause', async () => {
      // Two at a time: a process each, and two cores.
      const all = cases();
      const results = [];
      for (let i = 0; i < all.length; i += 2) {
        results.push(...await Promise.all(all.slice(i, i + 2).map(([, args, , env]) => runCli(args, { env: env || {} }))));
      }
      for (const [i, [what, , re]] of all.entries()) {
        const r = results[i];
        assert.equal(r.code, 1, `${what}: exit ${r.code}\n${r.err}`);
        const lines = r.err.split('\n').filter((l) => l && !/warmed up|^running /.test(l));
        assert.equal(lines.length, 1, `${what}: ${r.err}`);
        assert.match(lines[0], re, what);
        assert.ok(!/\n\s+at /.test(r.err), `${what}: no stack trace`);
      }
      assert.ok(!fs.existsSync('/proc/ged145-test.log'));
    });
  });

  it('bench/index.js with an unknown benchmark exits non-zero and lists them', async () => {
    const r = await runCli([], { cmdArgs: [require('node:path').join(__dirname, '..', '..', 'bench', 'index.js'), 'nonsense'] });
    assert.equal(r.code, 2);
    assert.match(r.err, /no benchmark named nonsense/);
    for (const b of ['codec', 'bare', 'http', 'open-loop', 'workers', 'cold-start']) assert.match(r.err, new RegExp(`\\b${b}\\b`));
  });

  it('--help lists the commands and exits 0', async () => {
    const r = await runCli(['--help']);
    assert.equal(r.code, 0);
    for (const c of ['gateway', 'rest-sim', 'router', 'run']) assert.match(r.out, new RegExp(`\\b${c}\\b`));
  });

  it('gateway without a backend says what to do in one line and exits 1', async () => {
    const r = await runCli(['gateway', '--port', '0', '--admin-port', '0'], { env: { GED145_BACKEND_URL: '' } });
    assert.equal(r.code, 1);
    assert.match(r.err, /no backend configured/);
    assert.ok(!/\n\s+at /.test(r.err), r.err);
  });

  it('a bad config file names the key and exits 1', async () => {
    const fs = require('node:fs');
    const path = require('node:path');
    const file = path.join(tmpDir(), 'bad.json');
    fs.writeFileSync(file, JSON.stringify({ limits: { maxInFlight: -1 } }));
    const r = await runCli(['gateway', '--config', file, '--backend', 'http://127.0.0.1:1']);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
    assert.equal(r.code, 1);
    assert.match(r.err, /limits\.maxInFlight must be an integer from 1 to 100000/);
  });

  describe('rest-sim + gateway + router as three processes', () => {
    let gw;
    let kill = () => {};
    before(async () => { ({ gw, kill } = await spawnSimAndGateway()); });
    after(() => kill());

    it('ged145 router --show prints each reply decoded, one line', async () => {
      const r = await runCli(['router', '--port', String(gw.port), '--rate', '5', '--duration', '1', '--show']);
      assert.equal(r.code, 0, r.err);
      const lines = r.out.split('\n').filter((l) => /ms {2}QUERY_RESP id=\d+ E_AG_NO_ERROR/.test(l));
      assert.equal(lines.length, 5, r.out);
      assert.ok(lines.every((l) => /(vars|eccArrays)=/.test(l)), r.out);
    });

    it('ged145 router prints a JSON summary with every query answered', async () => {
      const r = await runCli(['router', '--port', String(gw.port), '--rate', '200', '--duration', '1', '--json', '--sides', 'A,B']);
      assert.equal(r.code, 0, r.err);
      assertAnsweredOnce(JSON.parse(r.out), 200);
    });
  });

  it('--workers 2 serves from two processes on one port, with aggregated /metrics', async () => {
    const gw = spawnCli(['gateway', '--port', '0', '--host', '127.0.0.1', '--admin-port', '0', '--workers', '2', '--embedded-backend', '--ready-json']);
    try {
      const { port, adminPort, workers } = await gw.ready();
      assert.equal(workers, 2);
      const clients = [];
      for (let i = 0; i < 6; i++) {
        const c = await WireClient.connect(Number(port));
        await c.open({ config: `w${i}` });
        c.query(2, { subtype: 'customer.lookup', clid: '5551000001' });
        assert.equal((await c.waitFor((m) => m.invokeId === 2)).status, 0);
        clients.push(c);
      }
      const sessions = await (await fetch(`http://127.0.0.1:${adminPort}/sessions`)).json();
      assert.equal(sessions.length, 6);
      assert.equal(new Set(sessions.map((s) => s.pid)).size, 2, 'both workers took connections');
      const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
      assert.match(metrics, /ged145_queries_total\{subtype="customer.lookup",outcome="ok"\} 6/);
      for (const c of clients) c.close();
      gw.kill('SIGTERM');
      assert.equal((await gw.exited).code, 0);
    } finally {
      if (gw.exitCode === null) gw.kill('SIGKILL');
    }
  });

  it('--workers 2 on a port in use: one line, exit 1, no worker left behind (not a restart loop)', async () => {
    const holder = net.createServer();
    await new Promise((r) => holder.listen(0, '127.0.0.1', r));
    const { port } = holder.address();
    const gw = spawnCli(['gateway', '--port', String(port), '--host', '127.0.0.1', '--admin-port', '0', '--workers', '2', '--backend', 'http://127.0.0.1:9'],
      { group: true });
    try {
      const { code } = await gw.exited;
      assert.equal(code, 1);
      const lines = gw.err.split('\n').filter((l) => /already in use/.test(l));
      assert.deepEqual(lines, [`ged145 gateway: port ${port} on 127.0.0.1 is already in use`], gw.err);
      assert.doesNotMatch(gw.err, /starting another|\n\s+at /, 'no restart, no stack trace');
      await new Promise((r) => setTimeout(r, 300));
      assert.throws(() => process.kill(-gw.pid, 0), /ESRCH/, 'no process of its group is left');
    } finally {
      gw.killGroup('SIGKILL');
      holder.close();
    }
  });

  it('--workers 2: a worker that keeps dying young is started again after a growing delay', async () => {
    const gw = spawnCli(['gateway', '--port', '0', '--host', '127.0.0.1', '--admin-port', '0', '--workers', '2', '--backend', 'http://127.0.0.1:9']);
    try {
      await gw.waitFor(/2 workers listening/, 15_000);
      const [, adminPort] = await gw.waitFor(/admin on http:\/\/127\.0\.0\.1:(\d+)/);
      const pids = async () => (await (await fetch(`http://127.0.0.1:${adminPort}/health`)).json()).workers.map((w) => w.pid);
      process.kill((await pids())[0], 'SIGKILL');
      await gw.waitFor(/exited \(SIGKILL\); starting another$/m);
      let next = [];
      for (let i = 0; i < 100 && next.length < 2; i++) {
        await new Promise((r) => setTimeout(r, 100));
        next = (await pids()).filter(Boolean);
      }
      process.kill(Math.max(...next), 'SIGKILL'); // the one started last
      await gw.waitFor(/exited \(SIGKILL\); starting another in 0\.5 s \(2 died young in a row\)/);
      gw.kill('SIGTERM');
      assert.equal((await gw.exited).code, 0);
    } finally {
      if (gw.exitCode === null) gw.kill('SIGKILL');
    }
  });

  it('ged145 gateway keeps listening on every address, and its first line says where', async () => {
    const gw = spawnCli(['gateway', '--port', '0', '--admin-port', '0', '--backend', 'http://127.0.0.1:9'], { env: { GED145_HOST: '' } });
    try {
      await gw.waitFor(/listening for ICM routers on 0\.0\.0\.0:\d+/, 15_000);
      assert.match(gw.err.split('\n')[0], /info +\[gateway\] ged145 gateway \S+ starting, to listen on 0\.0\.0\.0 on a free port for routers \(every address\); admin on 127\.0\.0\.1 on a free port$/);
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
    }
  });

  it('npm start serves real answers from the built-in REST simulator, on 127.0.0.1 with no host set, and says so first', async () => {
    // GED145_HOST empty: no host from this environment, so the trial's own default shows.
    const npm = spawnCli([], {
      cmd: 'npm', cmdArgs: ['start', '--silent'], env: { GED145_PORT: '0', GED145_HOST: '', GED145_ADMIN_PORT: '0' }, group: true,
    });
    try {
      const [, port] = await npm.waitFor(/listening for ICM routers on 127\.0\.0\.1:(\d+)/, 15_000);
      const first = npm.err.split('\n')[0];
      assert.match(first, /info +\[gateway\] ged145 gateway \S+ starting, to listen on 127\.0\.0\.1 on a free port for routers \(this host only; --host 0\.0\.0\.0 /);
      await npm.waitFor(new RegExp(`next, in another terminal: npx ged145 router --host 127\\.0\\.0\\.1 --port ${port} `));
      assert.match(npm.err, /warn .*serving from the built-in REST simulator.*test data/);
      const c = await WireClient.connect(Number(port));
      await c.open();
      c.query(2, { subtype: 'customer.lookup', clid: '5551000007' });
      const r = await c.waitFor((m) => m.invokeId === 2);
      assert.equal(r.status, STATUS.E_AG_NO_ERROR);
      assert.equal(r.vars[1], 'A100007');
      c.close();
    } finally {
      npm.killGroup('SIGTERM'); // npm and the gateway it started
      await npm.exited;
    }
  });
});
