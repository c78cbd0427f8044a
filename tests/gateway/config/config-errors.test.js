'use strict';

// A config file that is not JSON is refused with where it broke (line, column, key) and never a
// character of it: a secret that lost its quotes must not reach the log, /status or `config
// check`. And a setting that cannot be honoured (a client CA without the listener's own
// certificate) is refused by `config check` and by a start, with one line. Real processes.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const fc = require('fast-check');
const { jsonSyntaxFault } = require('../../../lib/json-syntax');
const { spawnCli, runCli } = require('../../helpers/spawn');
const { tmpDir } = require('../../helpers/tmp');

const SECRET = 'p4ssw0rd-V';
/** The file the issue was found with: a basic-auth password written without its quotes, on line 4. */
const BROKEN = `{
  "backend": {
    "url": "http://127.0.0.1:9",
    "auth": {"type": "basic", "username": "gw", "password":${SECRET}"}
  }
}
`;
const WHERE = /line 4, column 60 \(key backend\.auth\.password\)/;

const parses = (t) => {
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
};

describe('config errors: positions, never values', function () {
  this.timeout(30_000);

  it('the scanner agrees with JSON.parse about every text, valid or damaged, and its words hold none of the text', () => {
    const edits = fc.constantFrom('delete', 'insert', 'replace');
    const chars = fc.constantFrom('"', ',', '}', ']', ':', 'x', '\\', '\n', ' ');
    const damaged = fc.tuple(fc.json(), fc.nat(), edits, chars)
      .map(([text, at, how, c]) => {
        const i = text.length === 0 ? 0 : at % text.length;
        if (how === 'delete') return text.slice(0, i) + text.slice(i + 1);
        if (how === 'insert') return text.slice(0, i) + c + text.slice(i);
        return text.slice(0, i) + c + text.slice(i + 1);
      });
    fc.assert(fc.property(damaged, (text) => {
      const fault = jsonSyntaxFault(text);
      assert.equal(fault === null, parses(text), JSON.stringify(text));
      if (fault !== null) {
        assert.ok(fault.offset >= 0 && fault.offset <= text.length);
        assert.match(fault.problem, /^[a-z ,:()?\\{}[\]]+$/i, 'fixed words only');
      }
    }), { numRuns: 3000, seed: 43 });
    // Nesting a million deep is found without overflowing the stack.
    assert.equal(jsonSyntaxFault('['.repeat(1e6)).problem, 'the file ends inside a list (a ] missing?)');
  });

  it('a secret that lost its quotes: config check, a start, a refused reload (log and /status) say line, column and key, never the secret', async () => {
    const dir = tmpDir();
    const broken = path.join(dir, 'broken.json');
    fs.writeFileSync(broken, BROKEN);

    const check = await runCli(['config', 'check', broken]);
    assert.equal(check.code, 1);
    assert.equal(check.err.split('\n').filter(Boolean).length, 1, check.err);
    assert.match(check.err, WHERE);
    assert.ok(!check.err.includes(SECRET) && !check.out.includes(SECRET), check.err);

    const start = await runCli(['gateway', '--config', broken, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0']);
    assert.equal(start.code, 1);
    assert.match(start.err, WHERE);
    assert.ok(!start.err.includes(SECRET) && !start.out.includes(SECRET), start.err);

    const file = path.join(dir, 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: 'http://127.0.0.1:9' } }));
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json']);
    try {
      const { adminPort } = await gw.ready();
      fs.writeFileSync(file, BROKEN);
      gw.kill('SIGHUP');
      await gw.waitFor(/reload refused/);
      const status = await (await fetch(`http://127.0.0.1:${adminPort}/status`)).json();
      assert.equal(status.config.lastReload.ok, false);
      assert.match(status.config.lastReload.error, WHERE);
      assert.ok(!JSON.stringify(status).includes(SECRET), 'not on /status');
      assert.match(gw.err, WHERE);
      assert.ok(!gw.err.includes(SECRET) && !gw.out.includes(SECRET), 'not in the log');
    } finally {
      gw.kill('SIGTERM');
      await gw.exited;
    }
  });

  it('tls.ca without tls.cert and tls.key: `config check` and a start refuse it in one line, even when the CA file is missing', async () => {
    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: 'http://127.0.0.1:9' }, tls: { ca: '/nonexistent/routers-ca.pem' } }));
    const line = /tls\.ca needs tls\.cert and tls\.key/;
    const check = await runCli(['config', 'check', file]);
    assert.equal(check.code, 1);
    assert.deepEqual(check.err.split('\n').filter(Boolean).length, 1, check.err);
    assert.match(check.err, line);
    const start = await runCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0']);
    assert.equal(start.code, 1, 'never a plain TCP listener in place of the TLS one asked for');
    assert.equal(start.err.split('\n').filter(Boolean).length, 1, start.err);
    assert.match(start.err, line);
    assert.doesNotMatch(start.err + start.out, /listening for ICM routers/);
  });
});
