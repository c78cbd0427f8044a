'use strict';

// A real redis-server on 127.0.0.1 for the shared-cache tests (Debian package redis-server;
// .ci/run installs it). Started on a free port with persistence off; stop() kills it. freeze()
// stops it with SIGSTOP: its connections stay open and nothing is answered, as with a frozen
// host or a black-holed route; thaw() lets it go on (SIGCONT). waitForKeys(n) waits for a
// gateway's write, which is in the background, instead of sleeping a guess.

const net = require('node:net');
const { spawn, execFileSync } = require('node:child_process');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startRedis(port) {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('redis-server is needed (apt-get install redis-server; .ci/run does it)');
  }
  const p = port || await freePort();
  const child = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 5000);
    child.stdout.on('data', (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited ${code}:\n${out}`)));
  });
  return {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    pid: child.pid,
    freeze() {
      child.kill('SIGSTOP');
    },
    thaw() {
      child.kill('SIGCONT');
    },
    /** Resolves with the key count once the server holds at least n keys; throws after timeoutMs. */
    async waitForKeys(n, timeoutMs = 5000) {
      const Redis = require('ioredis');
      const r = new Redis(`redis://127.0.0.1:${p}`, { maxRetriesPerRequest: 0 });
      try {
        const until = Date.now() + timeoutMs;
        for (;;) {
          const size = await r.dbsize();
          if (size >= n) return size;
          if (Date.now() > until) throw new Error(`redis holds ${size} keys after ${timeoutMs} ms, not ${n}`);
          await new Promise((resolve) => { setTimeout(resolve, 20); });
        }
      } finally {
        r.disconnect();
      }
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

module.exports = { startRedis, freePort };
