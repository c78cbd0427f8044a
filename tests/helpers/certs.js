'use strict';

// A throwaway CA, server and client certificates made at test time with openssl (never committed).

const { tmpDir } = require('./tmp');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

function makeCerts() {
  const dir = tmpDir('ged145-tls-');
  const f = (n) => path.join(dir, n);
  const ssl = (...args) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '1', '-subj', '/CN=ged145 test CA');
  fs.writeFileSync(f('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  for (const who of ['server', 'client']) {
    ssl(
      'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${who}.key`), '-out', f(`${who}.csr`), '-subj', `/CN=${who === 'server' ? 'localhost' : 'router-A'}`
    );
    ssl('x509', '-req', '-in', f(`${who}.csr`), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f(`${who}.pem`), '-days', '1',
      ...(who === 'server' ? ['-extfile', f('server.ext')] : []));
  }
  return {
    dir,
    ca: f('ca.pem'),
    serverCert: f('server.pem'),
    serverKey: f('server.key'),
    clientCert: f('client.pem'),
    clientKey: f('client.key'),
    /** A renewed server certificate (new key, subject CN=cn, same CA and names) written over server.pem and server.key. */
    renewServer(cn) {
      ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('renewed.key'), '-out', f('renewed.csr'), '-subj', `/CN=${cn}`);
      ssl('x509', '-req', '-in', f('renewed.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('renewed.pem'), '-days', '1',
        '-extfile', f('server.ext'));
      fs.copyFileSync(f('renewed.key'), f('server.key'));
      fs.copyFileSync(f('renewed.pem'), f('server.pem'));
    },
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

module.exports = { makeCerts };
