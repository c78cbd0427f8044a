'use strict';

// What systemd does for ged145.socket, in a test: holds a listening socket that outlives the
// gateways it is passed to (socket activation, sd_listen_fds(3)), so that a restart can be measured
// as `systemctl restart ged145` runs it: SIGTERM, wait for the exit, start the new process.
//
// The socket lives in a small holder process that never accepts on it (a Node server in this
// process would take connections itself); the holder starts each gateway with the socket as fd 3
// and LISTEN_PID set to the gateway's own pid (sh's $$, kept by exec).

const { fork } = require('node:child_process');
const net = require('node:net');
const { BIN } = require('./spawn');

if (require.main === module) {
  // The holder: fd 4 is the socket; fd 3 is the IPC channel to the test.
  const { spawn } = require('node:child_process');
  const running = new Map();
  process.on('message', (msg) => {
    if (msg.start) {
      const child = spawn('/bin/sh', ['-c', 'LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=router exec "$0" "$@"', process.execPath, BIN, ...msg.start], {
        stdio: ['ignore', 'pipe', 'pipe', 4], env: { ...process.env, ...msg.env },
      });
      running.set(child.pid, child);
      let out = '';
      const forward = (d) => {
        out += d;
        if (process.connected) process.send({ pid: child.pid, out: String(d) });
      };
      child.stdout.on('data', forward);
      child.stderr.on('data', forward);
      child.on('exit', (code, signal) => {
        running.delete(child.pid);
        if (process.connected) process.send({ pid: child.pid, exit: { code, signal }, out });
      });
      process.send({ started: child.pid, id: msg.id });
    } else if (msg.kill) {
      const child = running.get(msg.kill);
      if (child) child.kill(msg.signal || 'SIGTERM');
    }
  });
  // The test went away: the gateways go too, and with nothing left the holder ends by itself.
  process.on('disconnect', () => {
    for (const child of running.values()) child.kill('SIGKILL');
  });
} else {
  /** A holder of a socket on 127.0.0.1: {port, start(args, env) -> gateway, close()}. */
  module.exports.holdSocket = async function holdSocket() {
    const server = net.createServer();
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address();
    // The socket's own descriptor (a net.Server is no stream that stdio takes).
    const holder = fork(__filename, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc', server._handle.fd] });
    await new Promise((r) => holder.once('spawn', r));
    server.close(); // the holder's copy keeps it open; ours would accept connections
    const gateways = new Map();
    let nextId = 0;
    holder.on('message', (msg) => {
      const g = gateways.get(msg.pid);
      if (msg.out !== undefined && g && msg.exit === undefined) g.out += msg.out;
      if (msg.exit && g) g.done(msg.exit);
    });
    return {
      port,
      /** Starts `ged145 <args>` on the held socket: {pid, out, exited, waitFor(re), kill(signal)}. */
      start(args, env = {}) {
        const id = ++nextId;
        return new Promise((resolve) => {
          const onStarted = (msg) => {
            if (msg.started === undefined || msg.id !== id) return;
            holder.off('message', onStarted);
            const g = { pid: msg.started, out: '' };
            g.exited = new Promise((r) => { g.done = r; });
            g.kill = (signal = 'SIGTERM') => holder.send({ kill: g.pid, signal });
            g.waitFor = (re, ms = 20_000) => new Promise((ok, fail) => {
              const t0 = Date.now();
              const check = () => {
                if (re.test(g.out)) ok();
                else if (Date.now() - t0 > ms) fail(new Error(`timed out waiting for ${re}:\n${g.out}`));
                else setTimeout(check, 10);
              };
              check();
            });
            gateways.set(g.pid, g);
            resolve(g);
          };
          holder.on('message', onStarted);
          holder.send({ start: args, env, id });
        });
      },
      close() {
        holder.disconnect();
        return new Promise((r) => (holder.exitCode !== null ? r() : holder.once('exit', r)));
      },
    };
  };
}
