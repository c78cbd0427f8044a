'use strict';

// Hostile connections over real loopback sockets, from any 127.0.0.0/8 address (Linux answers
// for the whole range on lo, so one test can be several sources): connections an allowlist
// refuses, connections that never send OPEN_REQ, OPEN_REQs with a version no host speaks, and TLS
// handshakes that stall halfway through the ClientHello.

const fs = require('node:fs');
const net = require('node:net');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { serialize } = require('../../lib/protocol');
const { Router } = require('../../simulator/router');

const HEARTBEAT = serialize.heartbeatReq(1);

/** A TLS record header announcing a 512-byte ClientHello, and one byte of it: a handshake that never finishes. */
const HALF_CLIENT_HELLO = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);

/**
 * Opens one connection from `from`, calls act(socket) once connected, and resolves when it has
 * closed (the host closed it, or with untilData the host said something and we hung up): true
 * when the host sent something, so a session of its served it.
 */
function poke(port, from, act, { untilData = false } = {}) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress: from });
    let answered = false;
    s.on('error', () => {});
    s.on('connect', () => act(s));
    s.once('data', () => {
      answered = true;
      if (untilData) s.destroy();
    });
    s.on('close', () => resolve(answered));
  });
}

/**
 * n connections of one kind from `from`, started in batches of `batch` every `everyMs` (an accept
 * queue of 511 would otherwise overflow and the kernel retry SYNs a second later); resolves when
 * every one has closed, with how many a session answered (a heartbeat's or an OPEN's reply): when
 * the host's accept queue overflows, the kernel resets some before the host sees them.
 */
async function flood(port, n, from, kind, { batch = 20, everyMs = 10 } = {}) {
  // Every one sends at least one frame: a connection the kernel completed while the host's accept
  // queue was full waits for the client's next segment, and one that sent nothing would wait for ever.
  const acts = {
    // Refused before a byte is read.
    allowlist: (s) => s.end(HEARTBEAT).resume(),
    // A heartbeat and no OPEN_REQ; the host closes it at limits.openTimeoutMs.
    silent: (s) => s.resume().write(HEARTBEAT),
    // OPEN_REQ version 99: FAILURE_CONF E_AG_INVALID_VERSION, then we hang up.
    version: (s) => s.write(serialize.openReq({ invokeId: 1, version: 99, idleTimeoutMs: 60_000 })),
  };
  const done = [];
  for (let i = 0; i < n; i += batch) {
    for (let j = i; j < Math.min(n, i + batch); j++) done.push(poke(port, from, acts[kind], { untilData: kind === 'version' }));
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return (await Promise.all(done)).filter(Boolean).length;
}

/**
 * n stalled TLS handshakes, spread over the addresses `from`. With reopen, each one the host
 * closes is opened again, so that n are always pending from the flood's side. Returns
 * {ready (a promise), opened, sent, closed, stop()}.
 */
function stallHandshakes(port, n, from, { reopen = false, batch = 100, everyMs = 10 } = {}) {
  const state = {
    opened: 0, closed: 0, sent: 0, stopped: false, sockets: new Set(),
  };
  let allSent;
  const sentAll = new Promise((r) => { allSent = r; });
  const open = (address) => {
    if (state.stopped) return;
    const s = net.connect({ port, host: '127.0.0.1', localAddress: address });
    state.sockets.add(s);
    state.opened++;
    s.on('error', () => {});
    s.on('connect', () => {
      s.write(HALF_CLIENT_HELLO);
      if (++state.sent === n) allSent();
    });
    s.on('close', () => {
      state.sockets.delete(s);
      state.closed++;
      if (reopen) setImmediate(open, address);
    });
  };
  // Ready once n connections are established and have sent their half ClientHello (or, with
  // reopen, once as many have, counting those opened again).
  state.ready = (async () => {
    for (let i = 0; i < n; i += batch) {
      for (let j = i; j < Math.min(n, i + batch); j++) open(from[j % from.length]);
      await new Promise((r) => setTimeout(r, everyMs));
    }
    await sentAll;
  })();
  state.stop = async () => {
    state.stopped = true;
    await state.ready;
    const closing = [...state.sockets].map((s) => new Promise((r) => { s.once('close', r); s.destroy(); }));
    await Promise.all(closing);
  };
  return state;
}

/**
 * A TLS router (the project's simulator, trusting the CA file ca) opens its session on port:
 * resolves the milliseconds it took, or Infinity when it had none within ms.
 */
async function routerWithin(port, ca, ms) {
  const router = new Router({
    targets: [{ host: '127.0.0.1', port }], tls: { ca: fs.readFileSync(ca), servername: 'localhost' }, settings: { sessionRetryMs: 60_000 },
  });
  const t0 = Date.now();
  try {
    await router.start({ waitOpenMs: ms });
    return Date.now() - t0;
  } catch (err) {
    if (process.env.GED145_DEBUG_HOSTILE) process.stderr.write(`router: ${err.message}\n`);
    return Infinity;
  } finally {
    await router.stop().catch(() => {});
  }
}

/**
 * stallHandshakes in a process of its own (so that the flood's sockets do not slow the test's
 * router down): resolves {stop() -> {opened, closed}} once the n handshakes are under way.
 */
async function stallHandshakesElsewhere(port, n, from, { reopen = false } = {}) {
  const child = fork(__filename, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.send({
    port, n, from, reopen,
  });
  await once(child, 'message');
  return {
    async stop() {
      child.send('stop');
      const [figures] = await once(child, 'message');
      child.kill();
      return figures;
    },
  };
}

if (require.main === module) {
  process.once('message', async ({
    port, n, from, reopen,
  }) => {
    const flooding = stallHandshakes(port, n, from, { reopen });
    await flooding.ready;
    process.send('ready');
    process.once('message', async () => {
      await flooding.stop();
      process.send({ opened: flooding.opened, closed: flooding.closed });
    });
  });
}

const KINDS = {
  allowlist: /^connection refused: address not on the allowlist/,
  'open-timeout': /^no OPEN_REQ within/,
  'open-refused': /^OPEN_REQ refused/,
  connected: /^router connected$/,
  closed: /^router disconnected$/,
};

/** From a gateway's JSON log lines: per kind, the lines written one by one plus those its summaries count. */
function countedByKind(lines) {
  const n = {};
  for (const [kind, re] of Object.entries(KINDS)) {
    n[kind] = lines.filter((l) => re.test(l.message)).length
      + lines.filter((l) => l.kind === kind && typeof l.count === 'number').reduce((a, l) => a + l.count, 0);
  }
  return n;
}

/** The addresses 127.0.0.<first> .. 127.0.0.<first + count - 1>. */
const loopbacks = (first, count) => Array.from({ length: count }, (_, i) => `127.0.0.${first + i}`);

module.exports = {
  flood, stallHandshakes, stallHandshakesElsewhere, loopbacks, routerWithin, countedByKind, HALF_CLIENT_HELLO,
};
