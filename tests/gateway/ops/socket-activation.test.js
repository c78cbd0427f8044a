'use strict';

// Socket activation (deploy/systemd/ged145.socket): a gateway takes the listening socket systemd
// passes (sd_listen_fds(3)). Against systemd's own implementation: systemd-socket-activate (Debian's
// systemd package, installed by .ci/run) listens, and starts the real CLI when a router connects,
// as systemd does with Accept=no; and the rules for LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES.

const assert = require('node:assert/strict');
const net = require('node:net');
const { execFileSync } = require('node:child_process');
const { spawnCli, BIN } = require('../../helpers/spawn');
const { WireClient } = require('../../helpers/wire');
const { inheritedSocket } = require('../../../gateway/ops/listen-fds');

/** A port free a moment ago (systemd-socket-activate takes an address, not port 0). */
const freePort = () => new Promise((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

describe('socket activation', function () {
  this.timeout(30_000);

  describe('LISTEN_* variables (sd_listen_fds)', () => {
    it('takes fd 3, or the socket named "router", only when LISTEN_PID is this process; and removes them', () => {
      const env = { LISTEN_PID: '42', LISTEN_FDS: '1' };
      assert.deepEqual(inheritedSocket(env, 42), { fd: 3, name: null });
      assert.deepEqual(env, {}, 'removed, so that no child takes them for its own');
      assert.deepEqual(inheritedSocket({ LISTEN_PID: '42', LISTEN_FDS: '2', LISTEN_FDNAMES: 'admin:router' }, 42), { fd: 4, name: 'router' });
      const other = { LISTEN_PID: '41', LISTEN_FDS: '1' };
      assert.equal(inheritedSocket(other, 42), null, 'passed to another process');
      assert.deepEqual(other, {});
      assert.equal(inheritedSocket({}, 42), null);
      assert.throws(() => inheritedSocket({ LISTEN_PID: '42', LISTEN_FDS: '0' }, 42), /passed no socket/);
    });
  });

  describe('a real gateway under systemd-socket-activate', () => {
    before(() => {
      try {
        execFileSync('systemd-socket-activate', ['--version'], { stdio: 'ignore' });
      } catch {
        assert.fail('systemd-socket-activate is needed (apt-get install systemd; .ci/run does it)');
      }
    });

    it('a router that connects before the gateway runs waits in the backlog, then is answered on the socket systemd made', async () => {
      const port = await freePort();
      // --port 1: the gateway must use the socket it is given, not its configured port.
      const gw = spawnCli([], {
        cmd: 'systemd-socket-activate',
        cmdArgs: ['-l', `127.0.0.1:${port}`, '--fdname=router', process.execPath, BIN, 'gateway', '--port', '1', '--admin-port', '0',
          '--embedded-backend', '--ready-json'],
      });
      try {
        await gw.waitFor(new RegExp(`Listening on 127\\.0\\.0\\.1:${port}`));
        // Nothing runs the gateway yet: this connection is what starts it, and waits while it starts
        // and warms up, as a router waits for its OPEN_CONF (OpenTimeout, 15 s by default).
        const c = await WireClient.connect(port);
        await c.open({ config: 'side-A socket', waitMs: 15_000 });
        c.query(7, { subtype: 'customer.lookup', clid: '5551000001' });
        const r = await c.waitFor((m) => m.invokeId === 7, 5000);
        assert.equal(r.type, 'QUERY_RESP');
        const ready = JSON.parse(/^\{"ready".*$/m.exec(gw.out)[0]);
        assert.equal(ready.port, port, 'the socket systemd made, not --port 1');
        assert.match(gw.err, new RegExp(`listening for ICM routers on 127\\.0\\.0\\.1:${port} \\(socket 3 from the service manager\\)`));
        c.close();
      } finally {
        gw.kill('SIGTERM');
        await gw.exited;
      }
    });

    it('--workers 2: the primary holds the socket and both workers answer from it', async () => {
      const port = await freePort();
      const gw = spawnCli([], {
        cmd: 'systemd-socket-activate',
        cmdArgs: ['-l', `127.0.0.1:${port}`, process.execPath, BIN, 'gateway', '--port', '1', '--admin-port', '0', '--workers', '2',
          '--embedded-backend', '--ready-json'],
      });
      try {
        await gw.waitFor(new RegExp(`Listening on 127\\.0\\.0\\.1:${port}`));
        // The first connection starts the gateway; the sessions below come once both workers listen.
        const first = await WireClient.connect(port);
        await gw.ready();
        first.close();
        const clients = [];
        for (let i = 0; i < 4; i++) {
          const c = await WireClient.connect(port);
          await c.open({ config: `router ${i}` });
          c.query(7, { subtype: 'customer.lookup', clid: '5551000001' });
          assert.equal((await c.waitFor((m) => m.invokeId === 7, 5000)).type, 'QUERY_RESP');
          clients.push(c);
        }
        const workers = new Set([...gw.err.matchAll(/gateway\[(\d+)\].*session opened/g)].map((m) => m[1]));
        assert.equal(workers.size, 2, `both workers took sessions:\n${gw.err}`);
        for (const c of clients) c.close();
      } finally {
        gw.kill('SIGTERM');
        await gw.exited;
      }
    });
  });
});
