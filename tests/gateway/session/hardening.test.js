'use strict';

// Hostile and unlucky router-side input, over real loopback sockets (docs/reliability.md lists
// each case). Every test here failed before the behaviour it checks was built. One file for the
// whole table, so that docs/reliability.md and the tests can be read side by side.

const assert = require('node:assert/strict');
const net = require('node:net');
const tls = require('node:tls');
const crypto = require('node:crypto');
const { once } = require('node:events');
const {
  serialize, STATUS, des, MessageReader, DIRECTION,
} = require('../../../lib/protocol');
const { WireClient, exactlyOnce } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { loadConfig } = require('../../../gateway/config');
const { makeCerts } = require('../../helpers/certs');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const KEY = '12345678';

async function until(cond, ms = 5000, what = 'condition') {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await wait(5);
  }
}

/** A backend that answers every request with `answer` (JSON) after `delayMs`. */
function answering(answer, delayMs = 0) {
  return startTestBackend((req, res) => setTimeout(() => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(typeof answer === 'function' ? answer(req) : answer));
  }, delayMs));
}

/** Opens an encrypted session on c with the private key KEY; returns the session cipher for queries. */
async function openEncrypted(c, invokeId = 1) {
  const k = crypto.randomBytes(8);
  c.send(serialize.openReq({
    invokeId, version: 2, idleTimeoutMs: 60_000, encryption: 1, config: 'enc', sessionKey: des.sealSessionKey(Buffer.from(KEY), k),
  }, { nul: true }));
  const r = await c.waitFor((m) => m.invokeId === invokeId);
  assert.equal(r.type, 'OPEN_CONF');
  const cipher = des.createSessionCipher(k);
  c.reader.setCipher(cipher);
  return cipher;
}

/** Raw socket that records every byte, the FIN and any reset. */
async function rawClient(port) {
  const socket = net.connect(port, '127.0.0.1');
  const out = { socket, messages: [], errors: [], ended: false, closed: false };
  out.reader = new MessageReader({
    direction: DIRECTION.HOST_TO_ROUTER, maxMessageLength: 1 << 20, onMessage: (m) => out.messages.push(m), onError: (e) => out.errors.push(e.code),
  });
  socket.on('data', (c) => out.reader.push(c));
  socket.on('end', () => { out.ended = true; });
  socket.on('error', (e) => out.errors.push(e.code));
  socket.on('close', () => { out.closed = true; });
  await once(socket, 'connect');
  return out;
}

describe('hardening: router side', function () {
  this.timeout(30_000);

  describe('every reply fits one frame', () => {
    let backend;
    let stack;
    let answer;
    before(async () => {
      backend = await answering(() => answer);
      stack = await startStack({ backendUrl: backend.url, env: { GED145_DES_KEY: KEY } });
    });
    after(async () => {
      await stack.stop();
      await backend.close();
    });

    const bigEcc = () => Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`user.e${String(i).padStart(2, '0')}`, 'x'.repeat(210)]));
    const bigArrays = () => Array.from({ length: 250 }, (_, i) => ({ name: 'user.arr', index: i, value: 'y'.repeat(200) }));
    const vars = () => Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i + 1, `v${i + 1}`.repeat(20)]));

    for (const encrypted of [false, true]) {
      it(`${encrypted ? 'encrypted' : 'plain'}: 60 ECC entries of 210 characters are cut from the end to fit 8 KiB, VARs kept, logged`, async () => {
        answer = { vars: vars(), ecc: bigEcc() };
        const c = await WireClient.connect(stack.port);
        try {
          let enc;
          if (encrypted) enc = await openEncrypted(c);
          else await c.open();
          c.send(serialize.queryReq({ invokeId: 7, routerCallDay: 1, routerCallKey: 1, subtype: 'big' }, { nul: true, cipher: enc }));
          const r = await c.waitFor((m) => m.invokeId === 7);
          assert.deepEqual(c.errors, [], 'the router-side reader accepted every frame');
          assert.equal(r.type, 'QUERY_RESP');
          assert.deepEqual(r.vars, answer.vars);
          const kept = Object.keys(r.ecc);
          assert.ok(kept.length > 20 && kept.length < 60, `${kept.length} kept`);
          assert.deepEqual(kept, Object.keys(answer.ecc).slice(0, kept.length), 'dropped from the end');
          const note = stack.log.lines.find((l) => l.message === 'backend answer adjusted to fit GED-145' && l.invokeId === 7 && l.changes.some((x) => /frame limit/.test(x)));
          assert.ok(note, 'the drop is logged');
        } finally {
          c.close();
        }
      });

      it(`${encrypted ? 'encrypted' : 'plain'}: 250 eccArrays elements are cut to fit`, async () => {
        answer = { vars: { 1: 'kept' }, eccArrays: bigArrays() };
        const c = await WireClient.connect(stack.port);
        try {
          let enc;
          if (encrypted) enc = await openEncrypted(c);
          else await c.open();
          c.send(serialize.queryReq({ invokeId: 8, routerCallDay: 1, routerCallKey: 1, subtype: 'big' }, { nul: true, cipher: enc }));
          const r = await c.waitFor((m) => m.invokeId === 8);
          assert.deepEqual(c.errors, []);
          assert.equal(r.type, 'QUERY_RESP');
          assert.equal(r.vars[1], 'kept');
          assert.ok(r.eccArrays.length > 10 && r.eccArrays.length < 250);
          assert.deepEqual(r.eccArrays.map((e) => e.index), Array.from({ length: r.eccArrays.length }, (_, i) => i));
        } finally {
          c.close();
        }
      });
    }

    it('encrypted: two ECC pairs that fit 255 bytes but not 248 are packed into two tags, not refused', async () => {
      answer = { ecc: { a: 'x'.repeat(122), b: 'y'.repeat(122) } };
      const c = await WireClient.connect(stack.port);
      try {
        const enc = await openEncrypted(c);
        c.send(serialize.queryReq({ invokeId: 9, routerCallDay: 1, routerCallKey: 1, subtype: 'ecc' }, { nul: true, cipher: enc }));
        const r = await c.waitFor((m) => m.invokeId === 9);
        assert.equal(r.type, 'QUERY_RESP', JSON.stringify(r));
        assert.deepEqual(r.ecc, answer.ecc);
      } finally {
        c.close();
      }
    });
  });

  it('scalars alone over a small frame limit: FAILURE_CONF E_AG_HOST_ERROR1, and the session carries on', async () => {
    const backend = await answering({ vars: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i + 1, 'z'.repeat(255)])) });
    const stack = await startStack({ backendUrl: backend.url, gateway: { 'limits.maxMessageLength': 1024 } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      c.query(5, { subtype: 'x' });
      const r = await c.waitFor((m) => m.invokeId === 5);
      assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_HOST_ERROR1]);
      c.send(serialize.heartbeatReq(6));
      assert.equal((await c.waitFor((m) => m.invokeId === 6)).type, 'HEARTBEAT_CONF');
    } finally {
      c.close();
      await stack.stop();
      await backend.close();
    }
  });

  describe('timers never take absurd values', () => {
    it('OPEN_REQ IdleTimeout 0xFFFFFFFF gets limits.defaultIdleTimeoutMs, with no timer overflow', async () => {
      const warnings = [];
      const onWarning = (w) => warnings.push(w.name);
      process.on('warning', onWarning);
      const stack = await startStack({ gateway: { 'limits.defaultIdleTimeoutMs': 30_000 } });
      const c = await WireClient.connect(stack.port);
      try {
        await c.open({ idleTimeoutMs: 0xffffffff });
        await wait(50);
        const [s] = stack.gateway.toJSON();
        assert.equal(s.idleTimeoutMs, 30_000);
        assert.deepEqual(warnings.filter((w) => w === 'TimeoutOverflowWarning'), []);
        assert.equal(c.closed, false);
        assert.ok(stack.log.lines.some((l) => /IdleTimeout 4294967295 ms is outside/.test(l.message)));
      } finally {
        process.off('warning', onWarning);
        c.close();
        await stack.stop();
      }
    });

    for (const [
      key, value,
    ] of [['limits.openTimeoutMs', 2 ** 31], ['limits.defaultIdleTimeoutMs', 10], ['limits.maxMessageLength', 100], ['shutdownTimeoutMs', 2 ** 31]]) {
      it(`config refuses ${key} = ${value} with its range`, () => {
        assert.throws(
          () => loadConfig({ env: {}, overrides: { [key]: value } }), new RegExp(`${key.replace('.', '\\.')} must be an integer from \\d+ to \\d+`)
        );
      });
    }
  });

  describe('closing is graceful: replies first, then FAILURE_EVENT, then FIN, never a reset', () => {
    it('a fatal frame: the queries read before it are answered, then FAILURE_EVENT, then a clean close despite unread bytes', async () => {
      const backend = await answering({ vars: { 1: 'ok' } }, 100);
      const stack = await startStack({ backendUrl: backend.url });
      const c = await rawClient(stack.port);
      try {
        c.socket.write(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60_000 }));
        const queries = Buffer.concat([2, 3, 4, 5].map((id) => serialize.queryReq({ invokeId: id, routerCallDay: 1, routerCallKey: id, subtype: 's' })));
        const fatal = Buffer.alloc(8);
        fatal.writeUInt32BE(1 << 20, 0); // MessageLength over the limit
        fatal.writeUInt32BE(9, 4);
        // 512 KiB after the fatal header: far more than one read, so bytes are unread at close.
        c.socket.write(Buffer.concat([queries, fatal, Buffer.alloc(512 * 1024, 0x41)]));
        await until(() => c.closed, 10_000, 'the close');
        assert.deepEqual(c.errors, [], 'no reset');
        assert.equal(c.ended, true, 'a FIN');
        const types = c.messages.map((m) => [m.type, m.invokeId]);
        assert.deepEqual(types.slice(0, 1), [['OPEN_CONF', 1]]);
        assert.deepEqual(types.slice(1, 5).map(([t]) => t), ['QUERY_RESP', 'QUERY_RESP', 'QUERY_RESP', 'QUERY_RESP']);
        assert.deepEqual(exactlyOnce(c.messages, [2, 3, 4, 5]), { missing: [], duplicated: [] });
        assert.equal(types[5][0], 'FAILURE_EVENT');
        assert.equal(c.messages.length, 6);
      } finally {
        c.socket.destroy();
        await stack.stop();
        await backend.close();
      }
    });

    it('drain under pipelined load: every reply and the FAILURE_EVENT reach the router, no reset', async () => {
      const backend = await answering({ vars: { 1: 'ok' } }, 20);
      const stack = await startStack({ backendUrl: backend.url, gateway: { 'limits.maxInFlight': 8 } });
      const c = await rawClient(stack.port);
      try {
        c.socket.write(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60_000 }));
        const ids = Array.from({ length: 3000 }, (_, i) => 10 + i);
        c.socket.write(Buffer.concat(ids.map((id) => serialize.queryReq({
          invokeId: id, routerCallDay: 1, routerCallKey: id, subtype: 's', clid: '5551234567',
        }))));
        await until(() => c.messages.length > 5, 5000, 'first replies');
        const stopped = stack.gateway.shutdown('test drain');
        await until(() => c.closed, 10_000, 'the close');
        await stopped;
        assert.deepEqual(c.errors, [], 'no reset');
        assert.equal(c.ended, true);
        const replies = c.messages.filter((m) => m.invokeId >= 10);
        const seen = new Set();
        for (const m of replies) {
          assert.ok(!seen.has(m.invokeId), `one reply for ${m.invokeId}`);
          seen.add(m.invokeId);
          assert.ok(
            m.type === 'QUERY_RESP' || (m.type === 'FAILURE_CONF' && [STATUS.E_AG_HOST_OFFLINE, STATUS.E_AG_HOST_ERROR1].includes(m.status)), JSON.stringify(m)
          );
        }
        assert.equal(c.messages.at(-1).type, 'FAILURE_EVENT');
        assert.equal(c.messages.at(-1).status, STATUS.E_AG_HOST_OFFLINE);
      } finally {
        c.socket.destroy();
        await stack.stop();
        await backend.close();
      }
    });

    it('half-close: a router that sends FIN after its last query gets every answer, then the close', async () => {
      const backend = await answering({ vars: { 1: 'ok' } }, 80);
      const stack = await startStack({ backendUrl: backend.url });
      const c = await rawClient(stack.port);
      try {
        c.socket.write(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60_000 }));
        for (let id = 2; id <= 6; id++) c.socket.write(serialize.queryReq({ invokeId: id, routerCallDay: 1, routerCallKey: id, subtype: 's' }));
        c.socket.end();
        await until(() => c.closed, 5000, 'the close');
        assert.deepEqual(exactlyOnce(c.messages, [1, 2, 3, 4, 5, 6]), { missing: [], duplicated: [] });
        assert.ok(c.messages.slice(1).every((m) => m.type === 'QUERY_RESP'));
        assert.deepEqual(c.errors, []);
      } finally {
        c.socket.destroy();
        await stack.stop();
        await backend.close();
      }
    });
  });

  it('limits.maxInFlight is a hard cap even when one chunk carries 200 queries', async () => {
    const held = [];
    const backend = await startTestBackend((req, res) => held.push(res));
    const stack = await startStack({ backendUrl: backend.url, gateway: { 'limits.maxInFlight': 5, deadlineMs: 5000 } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      const ids = Array.from({ length: 200 }, (_, i) => 10 + i);
      c.send(Buffer.concat(ids.map((id) => serialize.queryReq({ invokeId: id, routerCallDay: 1, routerCallKey: id, subtype: 's' }))));
      await until(() => held.length >= 5, 3000, 'five backend calls');
      await wait(200);
      assert.equal(stack.gateway.inFlight(), 5);
      assert.equal(held.length, 5);
      let peak = 0;
      while (c.messages.length < 201) {
        peak = Math.max(peak, stack.gateway.inFlight());
        const res = held.shift();
        if (res) res.end('{"vars":{"1":"ok"}}');
        else await wait(2);
      }
      assert.ok(peak <= 5, `peak in flight ${peak}`);
      assert.deepEqual(exactlyOnce(c.messages, ids), { missing: [], duplicated: [] });
    } finally {
      for (const res of held) res.end('{}');
      c.close();
      await stack.stop();
      await backend.close();
    }
  });

  describe('DES session settings', () => {
    it('each OPEN sets encryption afresh: encrypted OPEN, CLOSE, plain OPEN gives a plain session', async () => {
      const stack = await startStack({ env: { GED145_DES_KEY: KEY } });
      const c = await WireClient.connect(stack.port);
      try {
        await openEncrypted(c);
        c.send(serialize.closeReq(2));
        await c.waitFor((m) => m.invokeId === 2);
        c.reader.setCipher(undefined);
        assert.equal((await c.open({ invokeId: 3 })).type, 'OPEN_CONF');
        c.query(4, { subtype: 'echo', vars: { 1: 'plain' } });
        const r = await c.waitFor((m) => m.invokeId === 4);
        assert.equal(r.type, 'QUERY_RESP');
        assert.equal(r.vars[1], 'plain');
      } finally {
        c.close();
        await stack.stop();
      }
    });

    it('des.require refuses a plain OPEN_REQ with E_AG_INVALID_KEY and closes', async () => {
      const stack = await startStack({ env: { GED145_DES_KEY: KEY }, gateway: { 'des.require': true } });
      const c = await WireClient.connect(stack.port);
      try {
        c.send(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60_000 }));
        const r = await c.waitFor((m) => m.invokeId === 1);
        assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_INVALID_KEY]);
        await c.waitClosed();
        const c2 = await WireClient.connect(stack.port);
        await openEncrypted(c2); // an encrypted one still opens
        c2.close();
      } finally {
        c.close();
        await stack.stop();
      }
    });

    it('des.require without a key stops the start, naming the key', () => {
      assert.throws(() => loadConfig({ env: {}, overrides: { 'des.require': true } }), /des\.require is true but no DES key/);
    });
  });

  describe('TLS', () => {
    let certs;
    before(() => { certs = makeCerts(); });
    after(() => certs.cleanup());

    it('a half-sent ClientHello is closed after limits.openTimeoutMs', async () => {
      const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey, 'limits.openTimeoutMs': 500 } });
      try {
        const s = net.connect(stack.port, '127.0.0.1');
        s.on('error', () => {});
        await once(s, 'connect');
        s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])); // a TLS record header and one byte
        const t0 = Date.now();
        await new Promise((r) => s.on('close', r));
        assert.ok(Date.now() - t0 < 3000, `closed after ${Date.now() - t0} ms`);
      } finally {
        await stack.stop();
      }
    });

    it('a handshake that times out is logged with its peer address', async () => {
      const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey, 'limits.openTimeoutMs': 200 } });
      try {
        const peers = [];
        for (let i = 0; i < 3; i++) {
          const s = net.connect(stack.port, '127.0.0.1');
          s.on('error', () => {});
          await once(s, 'connect');
          peers.push(`127.0.0.1:${s.localPort}`);
          s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])); // a ClientHello that stalls
          await new Promise((r) => s.on('close', r));
        }
        await wait(100);
        const lines = stack.log.lines.filter((l) => /TLS handshake failed/.test(l.message));
        assert.deepEqual(lines.map((l) => l.peer), peers, JSON.stringify(lines));
      } finally {
        await stack.stop();
      }
    });

    it('a handshake the router resets, or fails with a wrong certificate, is logged once with its peer address', async () => {
      const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey } });
      try {
        const peers = [];
        const reset = net.connect(stack.port, '127.0.0.1'); // its TLS socket no longer knows its peer when the failure comes
        reset.on('error', () => {});
        await once(reset, 'connect');
        peers.push(`127.0.0.1:${reset.localPort}`);
        reset.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
        await wait(100);
        reset.resetAndDestroy();
        const garbage = net.connect(stack.port, '127.0.0.1'); // fails while its TCP connection is open
        garbage.on('error', () => {});
        await once(garbage, 'connect');
        peers.push(`127.0.0.1:${garbage.localPort}`);
        garbage.write('GET / HTTP/1.1\r\n\r\n');
        await new Promise((r) => garbage.on('close', r));
        await wait(200);
        const lines = stack.log.lines.filter((l) => /TLS handshake failed/.test(l.message));
        assert.deepEqual(lines.map((l) => l.peer), peers, JSON.stringify(lines));
      } finally {
        await stack.stop();
      }
    });

    it('a connection refused by the allowlist is not also logged as a failed handshake', async () => {
      const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey, allowlist: ['10.9.9.9'] } });
      try {
        const s = tls.connect({ port: stack.port, host: '127.0.0.1', rejectUnauthorized: false });
        s.on('error', () => {});
        await new Promise((r) => s.on('close', r));
        await wait(100);
        assert.ok(stack.log.lines.some((l) => /not on the allowlist/.test(l.message)));
        assert.deepEqual(stack.log.lines.filter((l) => /TLS handshake failed/.test(l.message)), []);
      } finally {
        await stack.stop();
      }
    });
  });

  it('per-message log lines are throttled: 1,000 bad versions and 1,000 PARAM_REQs log a handful of lines', async () => {
    const stack = await startStack();
    const c = await WireClient.connect(stack.port);
    try {
      c.send(Buffer.concat(Array.from({ length: 1000 }, (_, i) => serialize.openReq({ invokeId: 1 + i, version: 99, idleTimeoutMs: 60_000 }))));
      await c.waitForCount(1000);
      await c.open({ invokeId: 5000 });
      c.send(Buffer.concat(Array.from({ length: 1000 }, (_, i) => serialize.paramReq({ invokeId: 6000 + i, paramId: 1, paramValue: i }))));
      await c.waitForCount(2001);
      const versionLines = stack.log.lines.filter((l) => /version not supported/.test(l.message)).length;
      const paramLines = stack.log.lines.filter((l) => l.message === 'PARAM_REQ').length;
      assert.ok(versionLines <= 11, `${versionLines} version lines`);
      assert.ok(paramLines <= 11, `${paramLines} PARAM lines`);
    } finally {
      c.close();
      await stack.stop();
    }
  });

  it('subtype labels are bounded (routes + limits.maxSubtypeLabels + (other)) and sanitised', async () => {
    const stack = await startStack({ gateway: { 'limits.maxSubtypeLabels': 5, routes: { 'route.one': { url: 'http://127.0.0.1:1/x' } } } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      const ids = Array.from({ length: 300 }, (_, i) => 10 + i);
      c.send(Buffer.concat(ids.map((id) => serialize.queryReq({
        invokeId: id, routerCallDay: 1, routerCallKey: id, subtype: id === 10 ? 'evil\n\x1b[31m"' : `sub${id}`,
      }))));
      c.query(999, { subtype: 'route.one' });
      await c.waitForCount(302);
      const text = await stack.gw.metrics();
      const labels = new Set([...text.matchAll(/^ged145_queries_total\{subtype="((?:[^"\\]|\\.)*)"/gm)].map((m) => m[1]));
      assert.ok(labels.has('route.one'), [...labels].join(','));
      assert.ok(labels.has('(other)'));
      assert.ok(labels.size <= 1 + 5 + 1, [...labels].join(','));
      assert.ok(labels.has('evil??[31m\\"') || labels.has('evil??[31m"'), [...labels].join(','));
      assert.ok(!/[\x00-\x08\x0b-\x1f]/.test(text), 'no control characters in /metrics');
    } finally {
      c.close();
      await stack.stop();
    }
  });

  it('session slots full: every extra OPEN gets E_AG_HOST_OFFLINE, and the log says so once, loudly', async () => {
    const stack = await startStack({ gateway: { 'limits.maxSessions': 2 } });
    const clients = [];
    try {
      for (let i = 0; i < 2; i++) {
        const c = await WireClient.connect(stack.port);
        clients.push(c);
        await c.open();
      }
      for (let i = 0; i < 20; i++) {
        const c = await WireClient.connect(stack.port);
        clients.push(c);
        c.send(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60_000 }));
        const r = await c.waitFor((m) => m.invokeId === 1);
        assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_HOST_OFFLINE]);
        await c.waitClosed();
      }
      const loud = stack.log.lines.filter((l) => /refusing routers: session limit \(2\) reached/.test(l.message));
      assert.equal(loud.length, 1);
      assert.equal(loud[0].level, 'error');
      assert.equal(stack.log.lines.filter((l) => /OPEN_REQ refused/.test(l.message)).length, 0, 'no line per refused router');
    } finally {
      for (const c of clients) c.close();
      await stack.stop();
    }
  });
});
