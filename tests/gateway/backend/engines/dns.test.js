'use strict';

// A backend name whose DNS server never answers. The real thing: a gateway process in a mount
// namespace of its own (unshare, as root) whose /etc/resolv.conf names 127.0.0.1, where this test
// holds UDP port 53 open and answers nothing, so getaddrinfo waits out the resolver's timeout as
// it does when a site's DNS server is down. And the lookup's rules, on a resolver that is told
// when to answer.

const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const fs = require('node:fs');
const path = require('node:path');
const { once } = require('node:events');
const { HostNames } = require('../../../../gateway/backend/engines/dns');
const { WireClient } = require('../../../helpers/wire');
const { spawnCli, BIN } = require('../../../helpers/spawn');
const { rateRun } = require('../../../helpers/real-backend');
const { startRestSim } = require('../../../../rest-sim/server');
const { tmpDir } = require('../../../helpers/tmp');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

describe('backend names whose DNS does not answer', function () {
  this.timeout(60_000);

  it('a lookup that hangs fails at its time limit; one at a time; a late answer is kept; a failed refresh keeps the old addresses', async () => {
    const calls = [];
    const names = new HostNames({ timeoutMs: 50, cacheMs: 100, staleMs: 10_000, resolve: (host, opts, cb) => calls.push(cb) });
    const ask = () => new Promise((resolve) => names.lookup('crm.example', { all: true }, (err, addresses) => resolve({ err, addresses })));
    const started = Date.now();
    const [a, b] = await Promise.all([ask(), ask()]);
    assert.equal(a.err.code, 'EAI_AGAIN');
    assert.equal(b.err.code, 'EAI_AGAIN');
    assert.ok(Date.now() - started < 200);
    assert.equal(calls.length, 1, 'one lookup for both');
    calls[0](null, [{ address: '10.0.0.5', family: 4 }]); // it answers, late
    assert.deepEqual((await ask()).addresses, [{ address: '10.0.0.5', family: 4 }], 'kept for the next connection');
    await wait(120); // past cacheMs: the known addresses answer at once, and are looked up again in the background
    assert.deepEqual((await ask()).addresses, [{ address: '10.0.0.5', family: 4 }]);
    assert.equal(calls.length, 2, 'refreshed');
    calls[1](Object.assign(new Error('no'), { code: 'ENOTFOUND' }));
    assert.deepEqual((await ask()).addresses, [{ address: '10.0.0.5', family: 4 }], 'the old addresses while the refresh fails');
    const ip = await new Promise((resolve) => names.lookup('127.0.0.1', {}, (err, address, family) => resolve([err, address, family])));
    assert.deepEqual(ip, [null, '127.0.0.1', 4]);
  });

  it('failover past a name whose DNS hangs: answered from the first seconds on; the dead name on /health with its cause', async () => {
    // It binds port 53 and mounts: root only. CI runs as root, and so must the tests.
    assert.equal(process.getuid(), 0, 'this test binds port 53 and mounts a resolv.conf: run the tests as root, as .ci/run does');
    const hole = dgram.createSocket('udp4');
    let questions = 0;
    hole.on('message', () => { questions++; });
    hole.bind(53, '127.0.0.1');
    await once(hole, 'listening');
    const dir = tmpDir();
    const resolv = path.join(dir, 'resolv.conf');
    fs.writeFileSync(resolv, 'nameserver 127.0.0.1\noptions timeout:10 attempts:1\n');
    const sim = await startRestSim({ port: 0 });
    const file = path.join(dir, 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: ['http://name-whose-dns-hangs.example:8080', sim.url] } }));
    const args = ['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json'];
    const gw = spawnCli([], {
      cmd: 'unshare',
      group: true,
      cmdArgs: ['--mount', '--fork', '--kill-child=SIGTERM', 'sh', '-c', `mount --bind ${resolv} /etc/resolv.conf && exec "$0" "$@"`,
        process.execPath, BIN, ...args],
    });
    try {
      const { port, adminPort } = await gw.ready();
      const client = await WireClient.connect(Number(port));
      await client.open();
      const records = await rateRun(client, {
        first: 10, rate: 100, durationMs: 7000, subtype: 'echo', clidOf: (id) => String(id),
      });
      const perSecond = Array.from({ length: 7 }, (_, s) => records.slice(s * 100, (s + 1) * 100));
      const answered = perSecond.map((rs) => rs.filter((r) => r.reply.type === 'QUERY_RESP' && r.latencyMs < 300).length);
      process.stdout.write(`      answered per second: ${answered.join(', ')}; DNS questions ${questions}\n`);
      assert.ok(answered.slice(3).every((n) => n >= 90), `from the 4th second at least 90 of 100 a second: ${answered}`);
      assert.ok(questions > 0, 'the gateway did ask the dead DNS server');
      const health = await (await fetch(`http://127.0.0.1:${adminPort}/health`)).json();
      const dead = health.backend.circuits['http://name-whose-dns-hangs.example:8080'];
      assert.match(dead.lastError, /EAI_AGAIN name-whose-dns-hangs\.example/);
      client.close();
    } finally {
      gw.killGroup('SIGTERM');
      await gw.exited;
      hole.close();
      await sim.close();
    }
  });
});
