'use strict';

// Per-subtype routes: URL templates filled from the query (always URL-encoded, never able to
// change the path, add a header or reach another host), response mappings, handler modules.

const { tmpDir } = require('../../helpers/tmp');
const assert = require('node:assert/strict');
const path = require('node:path');
const fc = require('fast-check');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { fillTemplate, PlaceholderError } = require('../../../gateway/backend/request');
const { parseTemplate } = require('../../../gateway/config/routes');
const { compileRoute } = require('../../../gateway/config/routes');
const { loadConfig } = require('../../../gateway/config');

describe('route templates', () => {
  const hostile = [
    '/', '..', '.', '../../admin', '?x=1', '#frag', '%2e%2e', '100%', 'a\r\nX-Injected: 1', 'caf\u00e9', '\u{1F600}', 'x'.repeat(255),
    '@evil.example', '\\..\\',
  ];

  it('cannot leave the path segment: no /, ?, #, raw %, CR or LF; "", "." and ".." are refused', () => {
    const tpl = parseTemplate('http://127.0.0.1:3000/customers/{clid}/x?dn={dn}');
    for (const v of ['', '.', '..']) {
      assert.throws(() => fillTemplate(tpl, { clid: v, dn: 'ok' }), (err) => err instanceof PlaceholderError && err.key === 'clid');
      assert.throws(() => fillTemplate(tpl, { clid: 'ok', dn: v }), PlaceholderError);
    }
    assert.throws(() => fillTemplate(tpl, { dn: 'ok' }), /clid is empty/);
    for (const v of hostile.filter((h) => h !== '.' && h !== '..')) {
      const p = fillTemplate(tpl, { clid: v, dn: v });
      const [pathPart, query] = p.split('?');
      assert.equal(pathPart.split('/').length, 4, `${JSON.stringify(v)} -> ${p}`);
      assert.ok(!/[\r\n#]/.test(p), p);
      assert.equal(query.split('&').length, 1, p);
      const segment = pathPart.split('/')[2];
      assert.ok(segment !== '.' && segment !== '..', p);
      assert.equal(decodeURIComponent(segment), v);
    }
  });

  it('property: any string in any placeholder decodes back to itself and keeps the path shape', () => {
    const tpl = parseTemplate('http://h/a/{clid}/b/{vars.1}');
    const usable = (v) => v !== '' && v !== '.' && v !== '..';
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 255 }), fc.string({ maxLength: 40 }), (clid, v1) => {
      fc.pre(usable(clid) && usable(v1));
      const p = fillTemplate(tpl, { clid, vars: { 1: v1 } });
      const segs = p.split('/');
      assert.equal(segs.length, 5);
      assert.equal(decodeURIComponent(segs[2]), clid);
      assert.equal(decodeURIComponent(segs[4]), v1);
      assert.ok(!segs.includes('..') && !segs.includes('.'));
    }), { numRuns: 500 });
  });

  it('refuses placeholders in the host, unknown placeholders, and header secrets that are not set', () => {
    assert.throws(() => parseTemplate('http://{clid}.example/x'), /host/);
    assert.throws(() => parseTemplate('http://h/{password}'), /unknown placeholder/);
    assert.throws(() => compileRoute({ url: 'http://h/x', headers: { authorization: 'Bearer ${NOT_SET_ANYWHERE_XYZ}' } }, { baseDir: '.', deadlineMs: 250, availability: loadConfig({ env: {} }).availability }), /NOT_SET_ANYWHERE_XYZ/);
  });
});

describe('per-subtype routes through the gateway', () => {
  let backend;
  let stack;
  let client;
  before(async () => {
    process.env.GED145_TEST_TOKEN = 's3cret';
    backend = await startTestBackend((req, res) => {
      if (req.url.startsWith('/customers/5551000001')) {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ account: { id: 'A1', tier: 'gold' }, balance: 12.5, history: [{ last: 'x' }] }));
      } else if (req.url.startsWith('/customers/')) {
        res.statusCode = 404;
        res.end(JSON.stringify({ message: 'no such customer' }));
      } else {
        res.end('{}');
      }
    });
    const config = {
      'backend.url': backend.url,
      routes: {
        'cust.get': {
          method: 'GET',
          url: `${backend.url}/customers/{clid}?dn={dn}`,
          headers: { Authorization: 'Bearer ${GED145_TEST_TOKEN}' },
          response: { 'vars.1': 'account.id', 'vars.2': 'account.tier', 'vars.3': 'balance', 'ecc.user.last': 'history[0].last' },
          errorPath: 'message',
        },
        'acct.balance': { module: path.join(__dirname, '..', '..', 'fixtures', 'handlers', 'balance.js') },
      },
    };
    stack = await startStack({ backendUrl: backend.url, gateway: config, env: { GED145_TEST_TOKEN: 's3cret' } });
    client = await WireClient.connect(stack.port);
    await client.open();
  });
  after(async () => {
    client.close();
    await stack.stop();
    await backend.close();
    delete process.env.GED145_TEST_TOKEN;
  });

  let id = 1;
  const ask = async (fields) => {
    const invokeId = ++id;
    client.query(invokeId, fields);
    return client.waitFor((m) => m.invokeId === invokeId);
  };

  it('fills the URL from the query, sends the header secret from the environment, maps the JSON to tags', async () => {
    const r = await ask({ subtype: 'cust.get', clid: '5551000001', dn: '800 555' });
    assert.equal(r.status, 0, JSON.stringify(r));
    assert.deepEqual(r.vars, { 1: 'A1', 2: 'gold', 3: '12.5' });
    assert.deepEqual(r.ecc, { 'user.last': 'x' });
    const req = backend.requests.at(-1);
    assert.equal(req.method, 'GET');
    assert.equal(req.url, '/customers/5551000001?dn=800%20555');
    assert.equal(req.headers.authorization, 'Bearer s3cret');
  });

  it('a 4xx on a route answers E_AG_HOST_ERROR2 with the text at errorPath', async () => {
    const r = await ask({ subtype: 'cust.get', clid: '999', dn: '1' });
    assert.equal(r.status, STATUS.E_AG_HOST_ERROR2);
    assert.equal(r.error, 'no such customer');
  });

  it('hostile CLIDs reach the backend as one encoded path segment, on the configured host only', async () => {
    for (const clid of ['../../admin', 'a/b?c#d', 'x\r\nX-Evil: 1', '%00', '%2E%2E', '...']) {
      const before = backend.requests.length;
      await ask({ subtype: 'cust.get', clid, dn: '1' });
      const req = backend.requests.at(-1);
      assert.equal(backend.requests.length, before + 1);
      assert.ok(req.url.startsWith('/customers/'), req.url);
      assert.equal(req.url.split('?')[0].split('/').length, 3, req.url);
      assert.equal(req.headers['x-evil'], undefined);
    }
  });

  it('a handler module answers, refuses (E_AG_HOST_ERROR2) or fails (E_AG_HOST_ERROR1)', async () => {
    assert.deepEqual((await ask({ subtype: 'acct.balance', clid: '42' })).vars, { 1: 'balance-for-42' });
    const refused = await ask({ subtype: 'acct.balance', clid: 'refuse' });
    assert.deepEqual([refused.status, refused.error], [STATUS.E_AG_HOST_ERROR2, 'account locked']);
    const failed = await ask({ subtype: 'acct.balance', clid: 'crash' });
    assert.equal(failed.status, STATUS.E_AG_HOST_ERROR1);
    assert.ok(!/exploded/.test(failed.error), 'internal error text stays in the host');
  });

  it('a handler module gets a real AbortSignal, aborted when the query\'s deadline passes', async () => {
    const { waited } = require('../../fixtures/handlers/balance');
    const r = await ask({ subtype: 'acct.balance', clid: 'wait' });
    assert.equal(r.status, STATUS.E_AG_HOST_ERROR1);
    while (waited.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(waited, [{ isAbortSignal: true, aborted: true }]);
  });

  it('subtypes without a route use the default contract', async () => {
    await ask({ subtype: 'anything.else' });
    assert.equal(backend.requests.at(-1).url, '/query/anything.else');
  });
});

describe('gateway config', () => {
  it('names the bad key', () => {
    const cases = [
      [{ port: 70000 }, /port must be/],
      [{ 'limits.maxInFlight': 0 }, /limits\.maxInFlight/],
      [{ 'backend.engine': 'curl' }, /backend\.engine/],
      [{ deadlineMs: 'soon' }, /deadlineMs/],
      [{ duplicates: 'maybe' }, /duplicates/],
      [{ routes: { x: { url: 'ftp://h/x' } } }, /routes\.x/],
    ];
    for (const [overrides, re] of cases) assert.throws(() => loadConfig({ env: {}, overrides }), re);
    assert.throws(() => loadConfig({ env: {}, overrides: { nope: 1 } }), /unknown key 'nope'/);
  });

  it('layers defaults <- file <- environment <- flags', () => {
    const fs = require('node:fs');
    const file = path.join(tmpDir(), 'c.json');
    fs.writeFileSync(file, JSON.stringify({ port: 6000, deadlineMs: 200, backend: { url: 'http://file:1' }, limits: { maxSessions: 8 } }));
    const c = loadConfig({ file, env: { GED145_DEADLINE_MS: '220', GED145_BACKEND_URL: 'http://env:2' }, overrides: { 'backend.url': 'http://flag:3' } });
    assert.equal(c.port, 6000);
    assert.equal(c.deadlineMs, 220);
    assert.equal(c.backend.url, 'http://flag:3');
    assert.equal(c.limits.maxSessions, 8);
    assert.equal(c.limits.maxInFlight, 1000);
    fs.writeFileSync(file, '{ not json');
    assert.throws(() => loadConfig({ file, env: {} }), /not valid JSON/);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });

  it('a handler module runs as require would run it: its own node_modules, import(), __dirname, this, a BOM; a reload reads its files again', async () => {
    const fs = require('node:fs');
    const dir = tmpDir();
    const pkg = path.join(dir, 'node_modules', 'tiers');
    fs.mkdirSync(pkg, { recursive: true });
    fs.writeFileSync(path.join(pkg, 'index.js'), "module.exports = { gold: 'Gold' };\n");
    fs.writeFileSync(path.join(dir, 'names.mjs'), "export const prefix = 'Dear';\n");
    fs.writeFileSync(path.join(dir, 'map.js'), "module.exports = (t) => t;\n");
    fs.writeFileSync(path.join(dir, 'handler.js'), `\uFEFFconst tiers = require('tiers');
const map = require('./map');
const top = this === module.exports && require.resolve('./map') === require('node:path').join(__dirname, 'map.js')
  && __filename === require('node:path').join(__dirname, 'handler.js') && require.cache[__filename] === module;
module.exports = async (q) => {
  const { prefix } = await import('./names.mjs');
  return { vars: { 1: map(tiers.gold), 2: prefix, 3: String(top) } };
};
`);
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, JSON.stringify({ routes: { r: { module: './handler.js' } } }));
    const route = () => loadConfig({ file, fresh: true, env: {} }).compiledRoutes.get('r');
    const first = route();
    assert.deepEqual(first.files.map((f) => path.basename(f)).sort(), ['handler.js', 'map.js'], 'its own files; the package is not the user\'s');
    assert.deepEqual(await first.handle({ clid: '1' }, {}), { vars: { 1: 'Gold', 2: 'Dear', 3: 'true' } });
    fs.writeFileSync(path.join(dir, 'map.js'), "module.exports = (t) => t.toUpperCase();\n");
    assert.deepEqual((await route().handle({ clid: '1' }, {})).vars[1], 'GOLD', 'a reload runs the edited file it requires');
    assert.deepEqual((await first.handle({ clid: '1' }, {})).vars[1], 'Gold', 'the running copy keeps its own');
  });

  it('the example config in docs/ loads', () => {
    const c = loadConfig({ file: path.join(__dirname, '..', '..', '..', 'docs', 'examples', 'gateway.json'), env: { BACKEND_TOKEN: 'example' } });
    assert.ok(c.compiledRoutes.size >= 2);
  });
});
