'use strict';

// Secrets from files, as systemd's LoadCredential= hands them over: a header value
// (backend.headerFiles, routes.<subtype>.headerFiles), the DES key (des.keyFile) and the backend's
// auth, each a relative name looked up in $CREDENTIALS_DIRECTORY first. A real gateway process:
// the secret reaches the backend and appears nowhere else (its log, /status, /health, /metrics,
// `config check`), and a bad secret file is refused by check and start with the same line.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { WireClient } = require('../../helpers/wire');
const { spawnCli } = require('../../helpers/spawn');
const { startTestBackend } = require('../../helpers/stack');
const { startGateway } = require('../../helpers/real-backend');
const { tmpDir } = require('../../helpers/tmp');

const API_KEY = 'k-7f3a9c-api-secret';
const ROUTE_TOKEN = 'r-88d1e0-route-secret';
const PASSWORD = 'p-41b2aa-basic-secret';
const DES_KEY = '0123456789abcdef';

describe('secrets from files ($CREDENTIALS_DIRECTORY)', function () {
  this.timeout(30_000);
  let backend;
  let creds;
  let dir;
  beforeEach(async () => {
    backend = await startTestBackend((req, res) => res.end('{"vars":{"1":"ok"}}'));
    dir = tmpDir();
    creds = path.join(dir, 'credentials');
    fs.mkdirSync(creds, { mode: 0o700 });
    fs.writeFileSync(path.join(creds, 'api-key'), `${API_KEY}\n`);
    fs.writeFileSync(path.join(creds, 'route-token'), `Bearer ${ROUTE_TOKEN}\n`);
    fs.writeFileSync(path.join(creds, 'crm-password'), PASSWORD);
    fs.writeFileSync(path.join(creds, 'des-key'), `${DES_KEY}\n`);
  });
  afterEach(() => backend.close());

  const config = () => ({
    backend: { url: backend.url, headerFiles: { 'X-Api-Key': 'api-key' }, auth: { type: 'basic', username: 'ged145', passwordFile: 'crm-password' } },
    des: { keyFile: 'des-key' },
    routes: { vip: { url: `${backend.url}/vip/{clid}`, headerFiles: { Authorization: 'route-token' }, auth: false } },
  });

  it('a header value, the route\'s own header, the basic password and the DES key reach their use, and nothing else shows them', async () => {
    // des.keyFile 'des-key' is only in the credentials directory: the start would fail without it.
    const gw = await startGateway(config(), { dir, env: { CREDENTIALS_DIRECTORY: creds } });
    try {
      const c = await WireClient.connect(gw.port);
      await c.open();
      c.query(1, { subtype: 'cust', clid: '5551234' });
      c.query(2, { subtype: 'vip', clid: '5551234' });
      await c.waitFor((m) => m.invokeId === 2);
      await c.waitFor((m) => m.invokeId === 1);
      c.close();
      const byPath = Object.fromEntries(backend.requests.map((r) => [r.url.split('/')[1], r.headers]));
      assert.equal(byPath.query['x-api-key'], API_KEY);
      assert.equal(byPath.query.authorization, `Basic ${Buffer.from(`ged145:${PASSWORD}`).toString('base64')}`);
      assert.equal(byPath.vip['x-api-key'], API_KEY);
      assert.equal(byPath.vip.authorization, `Bearer ${ROUTE_TOKEN}`);
      const seen = [gw.gw.out, gw.gw.err];
      for (const p of ['/status', '/health', '/metrics', '/sessions']) seen.push((await gw.admin(p)).text);
      const check = spawnCli(['config', 'check', gw.file], { env: { CREDENTIALS_DIRECTORY: creds } });
      await check.exited;
      assert.match(check.out, /: ok \(/);
      seen.push(check.out, check.err);
      for (const secret of [API_KEY, ROUTE_TOKEN, PASSWORD, DES_KEY, Buffer.from(`ged145:${PASSWORD}`).toString('base64')]) {
        assert.ok(!seen.some((text) => text.includes(secret)), `${secret} shows nowhere`);
      }
    } finally {
      await gw.stop();
    }
  });

  it('a secret file that is missing, empty or of two lines: check and start refuse it with the same line, the secret not in it', async () => {
    const file = path.join(dir, 'gateway.json');
    fs.writeFileSync(file, JSON.stringify(config()));
    const cases = [
      ['api-key', `${API_KEY}\nsecond line\n`, /backend\.headerFiles\.X-Api-Key: .*api-key holds more than one line/],
      ['api-key', '', /backend\.headerFiles\.X-Api-Key: .*api-key is empty/],
    ];
    for (const [name, content, line] of cases) {
      fs.writeFileSync(path.join(creds, name), content);
      const check = spawnCli(['config', 'check', file], { env: { CREDENTIALS_DIRECTORY: creds } });
      const env = { CREDENTIALS_DIRECTORY: creds };
      const start = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0'], { env });
      assert.equal((await check.exited).code, 1);
      assert.equal((await start.exited).code, 1);
      const checkLine = check.err.split('\n').find((l) => line.test(l));
      const startLine = start.err.split('\n').find((l) => line.test(l));
      assert.ok(checkLine, check.err);
      assert.ok(startLine, start.err);
      assert.ok(!`${check.err}${start.err}`.includes(API_KEY), 'the secret is not echoed');
    }
    fs.rmSync(path.join(creds, 'api-key'));
    const check = spawnCli(['config', 'check', file], { env: { CREDENTIALS_DIRECTORY: creds } });
    assert.equal((await check.exited).code, 1);
    assert.match(check.err, /backend\.headerFiles\.X-Api-Key/);
  });

  it('a header given both inline and as a file is refused', async () => {
    const file = path.join(dir, 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: backend.url, headers: { 'x-api-key': 'inline' }, headerFiles: { 'X-Api-Key': 'api-key' } } }));
    const check = spawnCli(['config', 'check', file], { env: { CREDENTIALS_DIRECTORY: creds } });
    assert.equal((await check.exited).code, 1);
    assert.match(check.err, /backend\.headerFiles\.X-Api-Key: the header is in backend\.headers too; give it once/);
  });
});
