'use strict';

// The compiled configuration (gateway/config/compiled.js): one compile, its parts named and
// visible (a debugger shows them), the availability settings always complete, and its secrets
// (the DES key, the listener's private key, header values, a proxy's password, the auth secret)
// in no util.inspect or JSON dump of it, while the code that uses them reads them as before.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');
const { loadConfig, compile } = require('../../../gateway/config');
const { SETTING_KEYS } = require('../../../gateway/config/schema');
const { makeCerts } = require('../../helpers/certs');
const { tmpDir } = require('../../helpers/tmp');

const DES_KEY = '0123456789abcdef';
const HEADER_SECRET = 'h-5e1f0c-header-secret';
const FILE_SECRET = 'f-90aa3b-file-secret';
const ROUTE_SECRET = 'r-77c2d4-route-secret';
const TOKEN = 't-31be9a-bearer-secret';
const PROXY_PASSWORD = 'pp-6d0e12-proxy-secret';
const PARTS = ['compiledRoutes', 'availability', 'backendRuntime', 'listenerTls', 'allowlistFilter', 'desKey'];

describe('the compiled configuration', function () {
  this.timeout(30_000);
  let certs;
  let dir;
  before(() => {
    certs = makeCerts();
    dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'api-key'), `${FILE_SECRET}\n`);
  });
  after(() => certs.cleanup());

  // Secrets as a deployment gives them: from the environment and from files, never written in the file itself.
  const env = {
    GED145_DES_KEY: DES_KEY, HEADER_SECRET, ROUTE_SECRET, TOKEN, HTTP_PROXY: `http://gw:${PROXY_PASSWORD}@proxy.example:3128`,
  };
  const settings = () => ({
    backend: {
      url: 'http://127.0.0.1:9',
      headers: { 'X-Tenant': '${HEADER_SECRET}' },
      headerFiles: { 'X-Api-Key': 'api-key' },
      auth: { type: 'bearer', token: '${TOKEN}' },
    },
    routes: { crm: { url: 'http://127.0.0.1:9/c/{clid}', headers: { authorization: 'Bearer ${ROUTE_SECRET}' } } },
    tls: { cert: certs.serverCert, key: certs.serverKey },
    allowlist: ['127.0.0.1'],
  });
  const load = () => {
    const file = path.join(dir, 'gateway.json');
    fs.writeFileSync(file, JSON.stringify(settings()));
    return loadConfig({ file, env });
  };
  const SECRETS = () => [DES_KEY, HEADER_SECRET, FILE_SECRET, ROUTE_SECRET, TOKEN, PROXY_PASSWORD,
    fs.readFileSync(certs.serverKey, 'utf8').split('\n')[1]]; // a line of the private key's base64

  it('names its compiled parts as visible fields, and uses the secrets as before', () => {
    const config = load();
    for (const part of PARTS) assert.ok(Object.keys(config).includes(part), `${part} is an enumerable field`);
    assert.ok(Buffer.isBuffer(config.desKey) && config.desKey.equals(Buffer.from(DES_KEY, 'hex')));
    assert.match(config.listenerTls.key.toString(), /-----BEGIN PRIVATE KEY-----/);
    assert.equal(config.backendRuntime.headers['x-tenant'], HEADER_SECRET);
    assert.equal(config.backendRuntime.headers['x-api-key'], FILE_SECRET);
    assert.deepEqual({ ...config.compiledRoutes.get('crm').headers }, { authorization: `Bearer ${ROUTE_SECRET}` });
    assert.equal(config.backendRuntime.proxy.forHttp, `http://gw:${PROXY_PASSWORD}@proxy.example:3128`);
    assert.equal(config.backendRuntime.auth.reveal(), TOKEN);
    assert.ok(config.allowlistFilter.allows('127.0.0.1') && !config.allowlistFilter.allows('10.0.0.1'));
  });

  it('shows no secret in util.inspect, however deep, or in JSON, of itself or of its parts', () => {
    const config = load();
    const dumps = {
      inspect: util.inspect(config, { depth: Infinity }),
      'inspect of the parts': PARTS.map((p) => util.inspect(config[p], { depth: Infinity })).join('\n'),
      'inspect of the routes': util.inspect([...config.compiledRoutes.values()], { depth: Infinity }),
      JSON: JSON.stringify(config),
      'JSON of the parts': JSON.stringify(Object.fromEntries(PARTS.map((p) => [p, config[p]]))),
      'JSON of the routes': JSON.stringify([...config.compiledRoutes.values()]),
      'JSON of a copy': JSON.stringify({ ...config }),
    };
    for (const [how, text] of Object.entries(dumps)) {
      for (const secret of SECRETS()) assert.ok(!text.includes(secret), `${how} shows ${secret}`);
    }
    assert.match(dumps.inspect, /desKey: \[redacted\]/);
    assert.match(dumps.inspect, /'x-tenant': '\[redacted\]'/);
    assert.match(dumps.inspect, /proxy\.example:3128/, 'the proxy is shown, its password is not');
  });

  it('is JSON as the settings it was compiled from, which compile again to the same parts (a cluster worker)', () => {
    const config = load();
    const json = JSON.parse(JSON.stringify(config));
    assert.deepEqual(Object.keys(json), [...SETTING_KEYS, 'baseDir', 'configFile']);
    assert.equal(json.backend.auth.token, '${TOKEN}', 'the settings as written: a worker reads the secrets from the environment and files itself');
    const again = compile(json, { baseDir: json.baseDir, env });
    assert.ok(again.desKey.equals(config.desKey));
    assert.equal(again.backendRuntime.headers['x-api-key'], FILE_SECRET);
    assert.equal(again.configFile, config.configFile);
    assert.deepEqual([...again.compiledRoutes.keys()], ['crm']);
    assert.deepEqual(again.availability, config.availability);
  });

  it('always carries the complete availability settings: the schema\'s defaults, nothing left for runtime code to invent', () => {
    const { availability } = loadConfig({ env: {} });
    assert.deepEqual(Object.keys(availability).sort(), ['breaker', 'cache', 'cacheScope', 'fallback', 'hedge', 'retry']);
    assert.equal(availability.fallback, null);
    assert.equal(availability.hedge, null, 'hedging off unless asked for');
    assert.equal(availability.cache, null);
    assert.equal(availability.cacheScope, null);
    assert.equal(availability.breaker.enabled, true);
    assert.deepEqual(availability.retry, { enabled: true, minRemainingMs: 50 });
    const cached = loadConfig({ env: {}, overrides: { cache: true } }).availability;
    assert.equal(cached.cache.ttlMs, 30_000);
    assert.match(cached.cacheScope, /^[0-9a-f]+/);
  });
});
