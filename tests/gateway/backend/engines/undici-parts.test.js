'use strict';

// undici's Pool and buildConnector from their own files (gateway/backend/engines/undici-parts.js):
// the very classes its public entry exports, no package index in a gateway process, and the
// public entry again when a path no longer holds what it did.

const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { load, PARTS } = require('../../../../gateway/backend/engines/undici-parts');

const ROOT = path.join(__dirname, '..', '..', '..', '..');

describe('undici parts', () => {
  for (const [name, file] of Object.entries(PARTS)) {
    it(`${name}: ${file} is what the installed undici exports under that name (an upgrade that moves it fails here)`, () => {
      assert.equal(require(file), require('undici')[name]);
      assert.equal(load(name), require('undici')[name]);
    });
  }

  it('a gateway process loads undici without its package index', () => {
    const script = `
      require('./gateway/index.js');
      const engines = require('./gateway/backend/engines');
      engines.createEngine('undici', engines.engineOptions(require('./gateway/config').DEFAULTS.backend));
      require('./gateway/backend/engines/proxy.js');
      const loaded = Object.keys(require.cache).filter((f) => f.includes('/node_modules/undici/')).map((f) => f.replace(/.*\\/node_modules\\/undici\\//, ''));
      process.stdout.write(JSON.stringify(loaded));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' }));
    assert.ok(loaded.includes('lib/dispatcher/pool.js'), loaded.join(' '));
    assert.ok(loaded.includes('lib/core/connect.js'), loaded.join(' '));
    assert.ok(!loaded.includes('index.js'), 'undici/index.js was loaded');
    assert.ok(!loaded.some((f) => f.startsWith('lib/web/')), 'fetch or WebSocket was loaded');
  });

  it('falls back to the public entry when the path is gone, or holds something else', () => {
    assert.equal(load('Pool', 'undici/lib/dispatcher/no-such-file'), require('undici').Pool);
    assert.equal(load('Pool', PARTS.buildConnector), require('undici').Pool);
    const notExported = (p) => {
      if (p !== 'undici') throw Object.assign(new Error(`${p} is not exported`), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });
      return require('undici');
    };
    assert.equal(load('Pool', PARTS.Pool, notExported), require('undici').Pool);
  });

  it('a file that fails to load for another reason is not hidden behind the fallback', () => {
    const broken = () => { throw new SyntaxError('Unexpected token'); };
    assert.throws(() => load('Pool', PARTS.Pool, broken), SyntaxError);
  });
});
