'use strict';

// When no session can be opened, the router simulator says why at once, as a real process:
// refused, TLS to a plain port, a missing client certificate, turned away by the allowlist;
// and --pcap refuses --tls instead of writing an empty capture.

const assert = require('node:assert/strict');
const { runCli } = require('../helpers/spawn');
const { startStack } = require('../helpers/stack');
const { makeCerts } = require('../helpers/certs');
const { explainConnectError } = require('../../simulator/connection');

async function failsWith(args, re) {
  const t0 = Date.now();
  const r = await runCli(['router', '--duration', '1', ...args]);
  assert.equal(r.code, 1, r.err);
  const lines = r.err.trim().split('\n');
  assert.equal(lines.length, 1, r.err);
  assert.match(lines[0], re);
  assert.ok(!/\n\s+at /.test(r.err));
  assert.ok(Date.now() - t0 < 4000, `said at once, not after waiting (${Date.now() - t0} ms)`);
}

describe('router simulator: why no session opened', function () {
  this.timeout(30_000);
  let certs;
  before(() => { certs = makeCerts(); });
  after(() => certs.cleanup());

  it('nothing listening: connection refused', async () => {
    const stack = await startStack();
    const { port } = stack;
    await stack.stop();
    await failsWith(['--port', String(port)], /connect failed: ECONNREFUSED: connection refused/);
  });

  it('TLS to a plain port', async () => {
    const stack = await startStack();
    try {
      await failsWith(['--port', String(stack.port), '--tls', '--tls-ca', certs.ca], /TLS to a port that does not speak TLS|reset the TLS handshake/);
    } finally {
      await stack.stop();
    }
  });

  it('a gateway that requires a client certificate, and none given', async () => {
    const stack = await startStack({ gateway: { 'tls.cert': certs.serverCert, 'tls.key': certs.serverKey, 'tls.ca': certs.ca } });
    try {
      await failsWith(['--port', String(stack.port), '--tls', '--tls-ca', certs.ca], /requires a client certificate/);
    } finally {
      await stack.stop();
    }
  });

  it('turned away right after connecting (the allowlist)', async () => {
    const stack = await startStack({ gateway: { allowlist: ['10.9.9.9'] } });
    try {
      await failsWith(['--port', String(stack.port)], /closed by the host right after connecting, before OPEN_CONF \(its allowlist/);
    } finally {
      await stack.stop();
    }
  });

  it('--pcap with --tls is refused before anything is written', async () => {
    const r = await runCli(['router', '--port', '1', '--tls', '--pcap', '/nonexistent/x.pcap']);
    assert.equal(r.code, 2);
    assert.match(r.err, /--pcap cannot capture a TLS connection/);
  });

  it('names the cause of each connect error code', () => {
    assert.match(explainConnectError('ENOTFOUND'), /host name not found/);
    assert.match(explainConnectError('ERR_SSL_WRONG_VERSION_NUMBER', true), /does not speak TLS/);
    assert.match(explainConnectError('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', true), /client certificate/);
    assert.match(explainConnectError('DEPTH_ZERO_SELF_SIGNED_CERT', true), /not trusted/);
  });
});
