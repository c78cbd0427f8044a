'use strict';

// `ged145 config check FILE` refuses exactly what `ged145 gateway --config FILE` refuses, with the
// same line: both real processes, on the same files.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { runCli, spawnCli } = require('../helpers/spawn');
const { makeCerts } = require('../helpers/certs');
const { tmpDir } = require('../helpers/tmp');

/** A start that is expected to be refused; one that serves instead is stopped after 10 s and fails the test. */
async function refusedStart(args) {
  const child = spawnCli(args);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const { code } = await child.exited;
  clearTimeout(timer);
  return { code, out: child.out, err: child.err };
}

describe('config check refuses what a start refuses', function () {
  this.timeout(60_000);
  let dir;
  let certs;
  before(() => {
    dir = tmpDir();
    certs = makeCerts();
  });
  after(() => certs.cleanup());

  const write = (name, config) => {
    const file = path.join(dir, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(config));
    return file;
  };
  const route = { cust: { method: 'GET', url: 'https://crm.example/customers?phone={clid}' } };

  const cases = [
    ['a missing backend CA', { backend: { url: 'https://crm.example', tls: { ca: 'no-such-ca.pem' } } }, /backend\.tls\.ca: cannot read .*no-such-ca\.pem: ENOENT/],
    ['a backend key that does not match its certificate', () => ({
      backend: { url: 'https://crm.example', tls: { cert: certs.serverCert, key: certs.clientKey } },
    }), /backend\.tls: .* cannot be used: the key does not match the certificate/],
    ['a listener certificate that is missing', { backend: { url: 'http://crm.example' }, tls: { cert: '/nonexistent/cert.pem', key: '/nonexistent/key.pem' } },
      /tls\.cert: cannot read \/nonexistent\/cert\.pem: ENOENT/],
    ['an unset variable in backend.headers', { backend: { url: 'http://crm.example', headers: { authorization: 'Bearer ${GED145_NO_SUCH_VAR}' } } },
      /backend\.headers\.authorization names environment variable GED145_NO_SUCH_VAR, which is not set/],
    ['a line break in backend.headers', { backend: { url: 'http://crm.example', headers: { 'x-a': 'a\r\nX-Evil: 1' } } },
      /backend\.headers\.x-a holds a line break at character 2, which no HTTP header can carry/],
    // Refused by one engine on every request and changed by the other: refused here, for both.
    ['a control character in backend.headers', { backend: { url: 'http://crm.example', headers: { 'x-api-key': 'k3y\u0001' } } },
      /backend\.headers\.x-api-key holds U\+0001 at character 4, which no HTTP header can carry/],
    ['a euro sign in a route\'s headers', { routes: { cust: { ...route.cust, headers: { 'x-api-key': '\u20ac100' } } } },
      /routes\.cust: headers\.x-api-key holds U\+20AC at character 1, which no HTTP header can carry/],
    ['a header name that is no token', { backend: { url: 'http://crm.example', headers: { 'x a': 'v' } } }, /backend\.headers: "x a" is no header name/],
    ['a static bearer token outside b64token', { backend: { url: 'https://crm.example', auth: { type: 'bearer', token: 'abc\u20ac' } } },
      /backend\.auth\.token is not a bearer token \(RFC 6750 b64token\): U\+20AC at character 4 of 4/],
    ['a missing client secret file', {
      backend: { url: 'https://crm.example', auth: { type: 'oauth2', tokenUrl: 'https://auth.example/token', clientId: 'g', clientSecretFile: 'nope' } },
    }, /backend\.auth\.clientSecretFile: cannot read .*nope: ENOENT/],
    ['oauth2 without a secret', { backend: { url: 'https://crm.example', auth: { type: 'oauth2', tokenUrl: 'https://auth.example/token', clientId: 'g' } } },
      /backend\.auth\.clientSecret \(or clientSecretFile\) is required for type oauth2/],
    ['the admin port on the GED-145 port', { backend: { url: 'http://crm.example' }, port: 5077, admin: { port: 5077 } }, /admin\.port \(5077\) is the GED-145 port too/],
    ['a log file in a directory that does not exist', { backend: { url: 'http://crm.example' }, log: { file: '/nonexistent-dir/ged145.log' } },
      /log file \/nonexistent-dir\/ged145\.log cannot be opened for writing: ENOENT/],
    ['nothing to ask', {}, /no backend configured: give --backend URL/],
  ];

  for (const [what, config, line] of cases) {
    it(`${what}: the same line from both`, async () => {
      const settings = typeof config === 'function' ? config() : config;
      const file = write(what.replace(/\W+/g, '-'), settings);
      // Ports from the file where the case is about them; otherwise any free ones.
      const ports = settings.port === undefined ? ['--port', '0', '--admin-port', '0'] : [];
      const [check, start] = await Promise.all([
        runCli(['config', 'check', file]),
        refusedStart(['gateway', '--config', file, '--host', '127.0.0.1', ...ports]),
      ]);
      assert.equal(check.code, 1, check.out + check.err);
      assert.equal(start.code, 1, start.out + start.err);
      assert.match(check.err, line);
      const said = line.exec(check.err)[0];
      assert.ok(start.err.includes(said), `the start says "${said}" too:\n${start.err}`);
      assert.doesNotMatch(start.err + check.err, /^\s+at /m, 'no stack trace');
    });
  }

  it('a configuration whose every route names its own URL needs no backend.url: check ok; the gateway starts and says what others get', async () => {
    const file = write('routes-only', { routes: route });
    const check = await runCli(['config', 'check', file]);
    assert.equal(check.code, 0, check.err);
    assert.match(check.out, /ok \(1 route; backend none\)/);
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json']);
    try {
      await gw.ready();
      assert.match(gw.err, /backend\.url is not set: only subtypes cust have a backend; the router gets E_AG_HOST_ERROR1 for any other/);
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
    }
  });
});
