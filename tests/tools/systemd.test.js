'use strict';

// deploy/systemd: the units verify with systemd's own checker (systemd-analyze verify, Debian's
// systemd package, installed by .ci/run), the template as an instance; and what ExecStart runs is a
// command line the CLI takes.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { tmpDir } = require('../helpers/tmp');

const ROOT = path.join(__dirname, '..', '..');
const UNITS = path.join(ROOT, 'deploy', 'systemd');

function verify(unitPath) {
  const r = spawnSync('systemd-analyze', ['verify', unitPath], { encoding: 'utf8', cwd: tmpDir() });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('systemd units (deploy/systemd)', function () {
  this.timeout(30_000);
  before(() => {
    try {
      execFileSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
    } catch {
      assert.fail('systemd-analyze is needed (apt-get install systemd; .ci/run does it)');
    }
  });

  it('ged145.service passes systemd-analyze verify, with nothing to say', () => {
    const r = verify(path.join(UNITS, 'ged145.service'));
    assert.equal(r.code, 0, r.out);
    assert.equal(r.out.trim(), '', r.out);
  });

  it('ged145.socket passes systemd-analyze verify, names its socket "router", and never closes with a restart of the service', () => {
    const r = verify(path.join(UNITS, 'ged145.socket'));
    assert.equal(r.code, 0, r.out);
    assert.equal(r.out.trim(), '', r.out);
    const unit = fs.readFileSync(path.join(UNITS, 'ged145.socket'), 'utf8');
    assert.match(unit, /^FileDescriptorName=router$/m, 'the name gateway/ops/listen-fds.js picks');
    assert.match(unit, /^Accept=no$/m);
    assert.doesNotMatch(unit, /^(PartOf|BindsTo)=/m, 'a restart of the service would close the socket');
  });

  it('the ged145@.service template passes as an instance (ged145@lab)', () => {
    const dir = tmpDir();
    fs.copyFileSync(path.join(UNITS, 'ged145@.service'), path.join(dir, 'ged145@.service'));
    fs.symlinkSync(path.join(dir, 'ged145@.service'), path.join(dir, 'ged145@lab.service'));
    const r = verify(path.join(dir, 'ged145@lab.service'));
    assert.equal(r.code, 0, r.out);
    assert.equal(r.out.trim(), '', r.out);
  });

  it('ExecStart is a command line the CLI takes, and the unit keeps its promises (reload, restart, sandbox)', () => {
    const unit = fs.readFileSync(path.join(UNITS, 'ged145.service'), 'utf8');
    const exec = /^ExecStart=\/usr\/bin\/env ged145 (.+)$/m.exec(unit)[1].split(' ');
    assert.deepEqual(exec, ['gateway', '--config', '/etc/ged145/gateway.json', '--workers', '2']);
    // The same flags with a config file that refuses to load: the CLI got past its options.
    const bad = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(bad, '{"port": "not a port"}');
    const args = exec.map((a) => (a === '/etc/ged145/gateway.json' ? bad : a));
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'ged145.js'), ...args], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /port/);
    assert.doesNotMatch(r.stderr, /unknown option|usage/);
    const promises = ['ExecReload=/bin/kill -HUP $MAINPID', 'Restart=on-failure', 'DynamicUser=yes', 'NoNewPrivileges=yes', 'ProtectSystem=strict',
      'PrivateTmp=yes', 'LimitNOFILE=65536', 'LoadCredential=ged145:/etc/ged145/credentials'];
    for (const key of promises) {
      assert.ok(unit.includes(`\n${key}\n`), key);
    }
  });
});
