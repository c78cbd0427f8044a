'use strict';

// A route's fingerprint (gateway/config/fingerprint.js), as the compiled configuration carries it
// in each route's cache scope: what changes the meaning of a cached answer changes it, what does
// not (timing, availability, a secret's value) leaves it alone, and a route key it was never told
// about counts too.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { loadConfig } = require('../../../gateway/config');
const { routeFingerprint, canonical } = require('../../../gateway/config/fingerprint');
const { tmpDir } = require('../../helpers/tmp');

const BACKEND = { url: 'http://crm:8080', headers: {}, headerFiles: {}, auth: null };

/** The cache scope of route `name` (or of queries no route names, with name null) in the config built from settings. */
function scopeOf(settings, name = 'r', { file } = {}) {
  const config = loadConfig({
    file, env: { API_KEY: 'k1', OTHER_KEY: 'k2' }, overrides: { 'backend.url': 'http://crm:8080', cache: { ttlMs: 1000 }, ...settings },
  });
  return name === null ? config.availability.cacheScope : config.compiledRoutes.get(name).cacheScope;
}

const rest = (extra = {}) => ({ routes: { r: { url: 'http://api:9000/customers/{clid}', response: { 'vars.1': 'tier' }, ...extra } } });

describe('route fingerprint', () => {
  it('is canonical: key order changes nothing, and side A and B compute the same one', () => {
    assert.equal(canonical({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } }), '{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}');
    const one = routeFingerprint('http', { url: 'http://a/x', method: 'GET', response: { 'vars.1': 'a', 'vars.2': 'b' } }, BACKEND);
    const two = routeFingerprint('http', { response: { 'vars.2': 'b', 'vars.1': 'a' }, method: 'GET', url: 'http://a/x' }, { ...BACKEND });
    assert.match(one, /^[0-9a-f]{16}$/);
    assert.equal(one, two);
    assert.equal(scopeOf(rest()), scopeOf(rest()), 'the same file loaded twice');
  });

  it('changes with what the route asks and how it reads the answer', () => {
    const base = scopeOf(rest());
    const changed = {
      url: scopeOf({ routes: { r: { url: 'http://api:9000/v2/customers/{clid}', response: { 'vars.1': 'tier' } } } }),
      method: scopeOf(rest({ method: 'POST' })),
      mapping: scopeOf(rest({ response: { 'vars.1': 'segment' } })),
      target: scopeOf(rest({ response: { 'vars.2': 'tier' } })),
      header: scopeOf(rest({ headers: { 'Accept-Language': 'de' } })),
      errorPath: scopeOf(rest({ errorPath: 'fault.text' })),
      statuses: scopeOf(rest({ statuses: { 404: 'ok' } })),
      body: scopeOf(rest({ body: 'query' })),
      bodyTemplate: scopeOf(rest({ method: 'POST', body: '<GetCustomer><phone>{clid}</phone></GetCustomer>', headers: { 'content-type': 'text/xml' } })),
      format: scopeOf(rest({ format: 'xml' })),
      authClient: scopeOf(rest({ auth: { type: 'basic', username: 'tenant-b', password: 'x' } })),
      backendHeader: scopeOf({ ...rest(), 'backend.headers': { 'X-Tenant': 'b' } }),
    };
    for (const [what, scope] of Object.entries(changed)) assert.notEqual(scope, base, what);
    assert.equal(new Set(Object.values(changed)).size, Object.keys(changed).length, 'each change gives its own');
  });

  it('a route key it was never told about counts too: nothing to list when routes learn a new key', () => {
    const route = { url: 'http://a/x', response: { 'vars.1': 'a' } };
    assert.notEqual(routeFingerprint('http', { ...route, bodyTemplate: '<a>{clid}</a>' }, BACKEND), routeFingerprint('http', route, BACKEND));
    assert.notEqual(routeFingerprint('http', { ...route, xml: { 'vars.1': 'Envelope.Body.tier' } }, BACKEND), routeFingerprint('http', route, BACKEND));
  });

  it('does not change with timing, availability settings or a secret\'s value; a secret never enters it', () => {
    const base = scopeOf(rest({ headers: { 'X-Api-Key': 'k1' } }));
    assert.equal(scopeOf(rest({ headers: { 'X-Api-Key': 'rotated' } })), base, 'a credential header\'s value');
    assert.equal(scopeOf(rest({ headers: { 'X-Api-Key': 'k1' }, timeoutMs: 90 })), base, 'timeoutMs');
    assert.equal(scopeOf(rest({ headers: { 'X-Api-Key': 'k1' }, idempotent: false })), base, 'idempotent');
    assert.equal(scopeOf(rest({ headers: { 'X-Api-Key': 'k1' }, fallback: { vars: { 1: 'x' } }, breaker: false })), base, 'fallback, breaker');
    assert.equal(scopeOf({ ...rest({ headers: { 'X-Api-Key': 'k1' } }), cache: { ttlMs: 5 } }), base, 'cache ttl');
    const withEnv = (name) => scopeOf(rest({ headers: { 'X-Client': `\${${name}}` } }));
    assert.equal(withEnv('API_KEY'), withEnv('API_KEY'));
    assert.notEqual(withEnv('API_KEY'), withEnv('OTHER_KEY'), '${NAME} counts as written');
    const secret = 'S3cr3t-value-9f8e7d';
    assert.equal(
      routeFingerprint('http', { url: 'http://a/x', auth: { type: 'oauth2', tokenUrl: 'http://t/token', clientId: 'c', clientSecret: secret } }, BACKEND),
      routeFingerprint('http', { url: 'http://a/x', auth: { type: 'oauth2', tokenUrl: 'http://t/token', clientId: 'c', clientSecret: 'other' } }, BACKEND),
      'auth\'s secret',
    );
    assert.notEqual(
      routeFingerprint('http', { url: 'http://a/x', auth: { type: 'oauth2', tokenUrl: 'http://t/token', clientId: 'c', clientSecret: secret } }, BACKEND),
      routeFingerprint('http', { url: 'http://a/x', auth: { type: 'oauth2', tokenUrl: 'http://t/token', clientId: 'd', clientSecret: secret } }, BACKEND),
      'auth\'s client',
    );
  });

  it('the default contract: backend.url counts; a REST route on another host does not follow it', () => {
    assert.notEqual(scopeOf({}, null), scopeOf({ 'backend.url': 'http://crm-b:8080' }, null));
    assert.notEqual(scopeOf({ routes: { r: { cache: { ttlMs: 5 } } } }), scopeOf({ 'backend.url': 'http://crm-b:8080', routes: { r: { cache: { ttlMs: 5 } } } }));
    assert.equal(scopeOf(rest()), scopeOf({ ...rest(), 'backend.url': 'http://crm-b:8080' }));
  });

  it('a handler module: its code is its meaning, the files it loads included', () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'map.js'), "module.exports = (body) => ({ vars: { 1: body.tier } });\n");
    fs.writeFileSync(path.join(dir, 'handler.js'), "const map = require('./map');\nmodule.exports = async (q) => map({ tier: q.clid });\n");
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, JSON.stringify({ routes: { r: { module: './handler.js' } } }));
    const load = () => {
      const config = loadConfig({ file, fresh: true, overrides: { 'backend.url': 'http://crm:8080', cache: { ttlMs: 1000 } } });
      return config.compiledRoutes.get('r').cacheScope;
    };
    const first = load();
    assert.equal(load(), first, 'the same code');
    fs.writeFileSync(path.join(dir, 'map.js'), "module.exports = (body) => ({ vars: { 2: body.tier } });\n");
    assert.notEqual(load(), first, 'a file the handler loads changed');
  });

  it('the namespace leads the scope; null leaves it out', () => {
    const plain = scopeOf(rest());
    assert.match(plain, /^[0-9a-f]{16}:$/);
    const named = scopeOf({ ...rest(), cache: { ttlMs: 1000, namespace: 'prod-eu' } });
    assert.equal(named, `prod-eu:${plain}`);
    assert.throws(() => scopeOf({ cache: { namespace: 'a b' } }), /cache\.namespace must be 1 to 64 letters/);
  });
});
