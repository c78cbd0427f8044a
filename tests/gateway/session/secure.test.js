'use strict';

// Secure transport end to end: DES-encrypted sessions and TLS, router simulator -> gateway -> REST simulator.

const { tmpDir } = require('../../helpers/tmp');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { STATUS, des, serialize } = require('../../../lib/protocol');
const { Router } = require('../../../simulator/router');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { makeCerts } = require('../../helpers/certs');
const { assertAnsweredOnce } = require('../../helpers/answered');

const V = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'des-vectors.json'), 'utf8'));
const KEY = '12345678';
const ECHO = [{
  subtype: 'echo', clid: '555{rand:1000000-1009999}', vars: { 1: 'v{seq}', 10: 'ten' }, ecc: { 'user.acct': 'A{seq}' },
  eccArrays: [{ name: 'user.h', index: 200, value: 'x{seq}' }],
}];

describe('DES-encrypted sessions', () => {
  let stack;
  before(async () => {
    stack = await startStack({ env: { GED145_DES_KEY: KEY } });
  });
  after(() => stack.stop());

  it('carries queries end to end: the router encrypts, the gateway decrypts, answers encrypted', async () => {
    const router = new Router({ targets: [{ host: '127.0.0.1', port: stack.port }], desKey: Buffer.from(KEY), templates: ECHO, seed: 2 });
    await router.start();
    const replies = [];
    router.on('reply', (m) => replies.push(m));
    await router.runClosedLoop({ window: 8, count: 200 });
    const s = await router.stop();
    assert.equal(s.ok, 200, JSON.stringify(s));
    assert.deepEqual(s.violations, {});
    for (const r of replies) {
      assert.equal(r.vars[10], 'ten');
      assert.match(r.vars[1], /^v\d+$/);
      assert.equal(r.ecc['user.acct'], `A${r.vars[1].slice(1)}`);
      assert.deepEqual(r.eccArrays, [{ name: 'user.h', index: 200, value: `x${r.vars[1].slice(1)}` }]);
    }
    const opened = stack.log.lines.find((l) => l.message === 'session opened' && l.encrypted === true);
    assert.ok(opened);
    assert.ok(!JSON.stringify(stack.log.lines).includes(KEY), 'the key is never logged');
  });

  it('the gateway decodes the encrypted vectors made with OpenSSL', async () => {
    const c = await WireClient.connect(stack.port);
    try {
      c.send(Buffer.from(V.openReq.hex, 'hex'));
      assert.equal((await c.waitFor((m) => m.invokeId === 1)).type, 'OPEN_CONF');
      const k = Buffer.from(V.sessionKey, 'hex');
      c.reader.setCipher(des.createSessionCipher(k)); // the reply comes back encrypted
      c.send(Buffer.from(V.queryReq.hex, 'hex'));
      const r = await c.waitFor((m) => m.invokeId === 5);
      assert.equal(r.type, 'QUERY_RESP');
      assert.deepEqual(r.vars, { 1: 'acct-1' });
      assert.deepEqual(r.ecc, { 'user.acct': 'A1' });
    } finally {
      c.close();
    }
  });

  it('a SESSION_KEY whose halves differ is refused with E_AG_INVALID_KEY and the connection closed', async () => {
    const c = await WireClient.connect(stack.port);
    c.send(Buffer.from(V.openReqBadKey.hex, 'hex'));
    const r = await c.waitFor((m) => m.invokeId === 2);
    assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_INVALID_KEY]);
    await c.waitClosed();
  });

  it('encryption asked of a gateway with no key: E_AG_INVALID_KEY, logged clearly, connection closed', async () => {
    const plain = await startStack();
    try {
      const c = await WireClient.connect(plain.port);
      c.send(Buffer.from(V.openReq.hex, 'hex'));
      const r = await c.waitFor((m) => m.invokeId === 1);
      assert.deepEqual([r.type, r.status], ['FAILURE_CONF', STATUS.E_AG_INVALID_KEY]);
      await c.waitClosed();
      assert.ok(plain.log.lines.some((l) => /no key is configured/.test(l.message)));
    } finally {
      await plain.stop();
    }
  });

  it('a router with another DES key: every query FAILURE_CONF E_AG_INVALID_KEY, never status 0, the backend never asked; '
    + 'the router reaches its ErrorThreshold; one line per session', async () => {
    // A backend that answers 200 to anything, as many do to a blank POST /query: what made every call a success.
    const api = await startTestBackend((req, res) => res.end(JSON.stringify({ vars: { 1: 'someone' } })));
    const own = await startStack({ env: { GED145_DES_KEY: KEY }, backendUrl: api.url });
    try {
      const router = new Router({
        targets: [{ host: '127.0.0.1', port: own.port }],
        desKey: Buffer.from('87654321'),
        templates: ECHO,
        seed: 3,
        settings: { errorThreshold: 10, sessionRetryMs: 20 },
      });
      await router.start();
      await router.runClosedLoop({ window: 4, count: 100 });
      const s = await router.stop();
      assert.ok(s.answered >= 50, JSON.stringify(s)); // the rest were in flight when the router dropped its session
      assert.equal(s.ok, 0, `never answered as a success: ${JSON.stringify(s)}`);
      assert.deepEqual(Object.keys(s.failures), ['E_AG_INVALID_KEY'], JSON.stringify(s));
      assert.equal(s.failures.E_AG_INVALID_KEY, s.answered);
      assert.ok(s.closes['ErrorThreshold (10) consecutive errors'] >= 5, `the router counts them: ${JSON.stringify(s.closes)}`);
      const metrics = await own.gw.metrics();
      assert.match(metrics, /ged145_queries_total\{[^}]*outcome="invalid_key"\} \d+/);
      assert.doesNotMatch(metrics, /ged145_queries_total\{[^}]*outcome="ok"\} [1-9]/);
      assert.equal(api.requests.length, 0, 'the backend was never asked');
      const opened = own.log.lines.filter((l) => l.message === 'session opened').length;
      const said = own.log.lines.filter((l) => /different DES private keys/.test(l.message)).length;
      assert.ok(opened >= 5);
      assert.equal(said, opened, 'once per session');
      assert.equal(own.log.lines.filter((l) => /ignored an encrypted field/.test(l.message)).length, 0, 'no line per field');
    } finally {
      await own.stop();
      await api.close();
    }
  });

  it('with the right key, one field that does not decrypt is ignored and the query answered; nothing else is refused', async () => {
    const c = await WireClient.connect(stack.port);
    try {
      c.send(Buffer.from(V.openReq.hex, 'hex'));
      assert.equal((await c.waitFor((m) => m.invokeId === 1)).type, 'OPEN_CONF');
      const k = Buffer.from(V.sessionKey, 'hex');
      const cipher = des.createSessionCipher(k);
      c.reader.setCipher(cipher);
      // VAR2 arrives as 5 bytes: not whole DES blocks, dropped; SUBTYPE, CLID and VAR1 decrypt.
      const encryptField = (data) => (data.toString().startsWith('mangled') ? Buffer.alloc(5, 0xee) : cipher.encryptField(data));
      const mangled = { ...cipher, encryptField };
      c.send(serialize.queryReq({
        invokeId: 9, routerCallDay: 1, routerCallKey: 9, subtype: 'echo', clid: '5550001', vars: { 1: 'acct-9', 2: 'mangled' },
      }, { nul: true, cipher: mangled }));
      const r = await c.waitFor((m) => m.invokeId === 9);
      assert.deepEqual([r.type, r.status, r.vars[1]], ['QUERY_RESP', 0, 'acct-9']);
      assert.equal(r.vars[2], undefined);
    } finally {
      c.close();
    }
  });

  it('a key in des.keyFile works as GED145_DES_KEY does; a bad key stops the start naming its source, not its value', async () => {
    const { loadConfig } = require('../../../gateway/config');
    const file = path.join(tmpDir(), 'des.key');
    fs.writeFileSync(file, '3132333435363738\n');
    assert.deepEqual(loadConfig({ env: {}, overrides: { 'des.keyFile': file } }).desKey, Buffer.from(KEY));
    assert.throws(() => loadConfig({ env: { GED145_DES_KEY: 'secret-ish-9' } }), (e) => /GED145_DES_KEY/.test(e.message) && !e.message.includes('secret-ish-9'));
    assert.equal(JSON.stringify(loadConfig({ env: { GED145_DES_KEY: KEY } })).includes(KEY), false);
  });
});

describe('TLS listener', function () {
  this.timeout(30_000);
  let certs;
  before(() => { certs = makeCerts(); });
  after(() => certs.cleanup());

  it('carries sessions over TLS with the same limits; a plain TCP client gets no session', async () => {
    const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey } });
    try {
      const router = new Router({
        targets: [{ host: '127.0.0.1', port: stack.port }], tls: { ca: fs.readFileSync(certs.ca), servername: 'localhost' }, seed: 3,
      });
      await router.start();
      await router.runClosedLoop({ window: 4, count: 100 });
      const s = await router.stop();
      assert.equal(s.ok, 100);
      const plain = await WireClient.connect(stack.port);
      plain.send(Buffer.from(V.openReq.hex, 'hex'));
      await plain.waitClosed(5000);
      assert.equal(plain.messages.length, 0);
    } finally {
      await stack.stop();
    }
  });

  it('with tls.ca, a router must present a client certificate signed by that CA', async () => {
    const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey, 'tls.ca': certs.ca } });
    try {
      const base = { ca: fs.readFileSync(certs.ca), servername: 'localhost' };
      const anonymous = new Router({ targets: [{ host: '127.0.0.1', port: stack.port }], tls: base, settings: { sessionRetryMs: 60_000 } });
      await assert.rejects(anonymous.start({ waitOpenMs: 1500 }), /no session opened/);
      await anonymous.stop({ drainMs: 0 });
      const router = new Router({
        targets: [{ host: '127.0.0.1', port: stack.port }], tls: { ...base, cert: fs.readFileSync(certs.clientCert), key: fs.readFileSync(certs.clientKey) },
      });
      await router.start();
      await router.runClosedLoop({ window: 2, count: 20 });
      assert.equal((await router.stop()).ok, 20);
      assert.match(await stack.gw.metrics(), /ged145_connections_refused_total\{reason="tls"\} [1-9]/);
    } finally {
      await stack.stop();
    }
  });

  it('a plain router against a TLS gateway is told about TLS, not about allowlists', async () => {
    const { runCli } = require('../../helpers/spawn');
    const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey } });
    try {
      const r = await runCli(['router', '--port', String(stack.port), '--rate', '10', '--duration', '1']);
      assert.equal(r.code, 1);
      assert.match(r.err, /the host speaks TLS and this router does not: add --tls/);
      assert.doesNotMatch(r.err, /allowlist/);
    } finally {
      await stack.stop();
    }
  });

  it('a router pointed at an HTTP port is told so, not "host framing broken"', async () => {
    const { runCli } = require('../../helpers/spawn');
    const stack = await startStack();
    try {
      const r = await runCli(['router', '--port', String(stack.adminPort), '--rate', '10', '--duration', '1']);
      assert.equal(r.code, 1);
      assert.match(r.err, new RegExp(`the host answered in HTTP, not GED-145: ${stack.adminPort} is a web port`));
    } finally {
      await stack.stop();
    }
  });

  it('ged145 router --tls --tls-ca and --des-key work from the command line', async () => {
    const { runCli } = require('../../helpers/spawn');
    const stack = await startStack({ env: { GED145_DES_KEY: KEY }, gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey } });
    try {
      const r = await runCli([
        'router', '--port', String(stack.port), '--tls', '--tls-ca', certs.ca, '--des-key', '3132333435363738', '--rate', '50', '--duration', '1', '--json',
      ]);
      assert.equal(r.code, 0, r.err);
      assertAnsweredOnce(JSON.parse(r.out), 50); // over TLS and DES: a wrong key or a broken frame would not be ok
    } finally {
      await stack.stop();
    }
  });
});
