'use strict';

// The folders' dependency rules (eslint.config.js, README "Folders") are enforced, not just
// written down: ESLint, run on a require that crosses a boundary, reports it.

const assert = require('node:assert/strict');
const path = require('node:path');
const { ESLint } = require('eslint');

const ROOT = path.join(__dirname, '..', '..');

async function problems(file, code) {
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintText(`'use strict';\n\n${code}\n`, { filePath: path.join(ROOT, file) });
  return result.messages.filter((m) => m.ruleId === 'n/no-restricted-require').map((m) => m.message);
}

describe('folder boundaries (ESLint)', function () {
  this.timeout(30000);

  it('session/ reaches backend/ only through its entry and outcome module', async () => {
    assert.deepEqual(await problems('gateway/session/x.js', "require('../backend');\nrequire('../backend/outcome');"), []);
    const [message] = await problems('gateway/session/x.js', "require('../backend/backend');");
    assert.match(message, /through backend\/index\.js and backend\/outcome\.js/);
  });

  it('backend/ never imports session/, config/ or ops/', async () => {
    const found = await problems('gateway/backend/x.js', "require('../session/session');\nrequire('../config');\nrequire('../ops/metrics');");
    assert.equal(found.length, 3, found.join('\n'));
  });

  it('backend/ never imports answer/: the gateway hands the answer cache the form it keeps answers in', async () => {
    const [message] = await problems('gateway/backend/x.js', "require('../answer/writer');");
    assert.match(message, /answer\/ knows what GED-145 can carry/);
    assert.deepEqual(await problems('gateway/server.js', "require('./answer/writer');"), []);
  });

  it('the product never imports the simulator, the runner or the benches; lib/ imports no component', async () => {
    assert.equal((await problems('gateway/x.js', "require('../simulator/router');\nrequire('../runner/cli');\nrequire('../bench/harness');")).length, 3);
    assert.equal((await problems('lib/x.js', "require('../gateway/server');")).length, 1);
    assert.deepEqual(await problems('gateway/x.js', "require('./backend');\nrequire('./session/session');\nrequire('../lib/protocol');"), []);
  });

  it('lib/protocol/, the codec, requires nothing outside itself: it could be published alone', async () => {
    const [message] = await problems('lib/protocol/x.js', "require('../errors');");
    assert.match(message, /the codec, publishable alone/);
    assert.deepEqual(await problems('lib/protocol/x.js', "require('./errors');\nrequire('./constants');\nrequire('binary-parser');"), []);
    assert.deepEqual(await problems('lib/x.js', "require('./protocol');\nrequire('./errors');"), []);
  });
});

/** Subpaths a package documents as its API, with no other entry for it. */
const DOCUMENTED_SUBPATHS = new Set([
  'ajv/dist/standalone', // ajv's standalone code (ajv.js.org/standalone.html), what gateway/config/validator-build.js compiles the schema with
]);

describe('dependencies through their public entry points', () => {
  it('no require reaches into a package\'s internal paths', () => {
    const { execFileSync } = require('node:child_process');
    const { builtinModules } = require('node:module');
    const files = execFileSync('git', ['ls-files', '*.js'], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n');
    const deep = [];
    for (const file of files) {
      const src = require('node:fs').readFileSync(path.join(ROOT, file), 'utf8');
      for (const [, spec] of src.matchAll(/require(?:\.resolve)?\(\s*'([^'.][^']*)'\s*\)/g)) {
        const parts = spec.split('/');
        const pkg = spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
        if (spec === pkg || builtinModules.includes(spec.replace(/^node:/, '')) || spec.startsWith('node:') || DOCUMENTED_SUBPATHS.has(spec)) continue;
        deep.push(`${file}: ${spec}`);
      }
    }
    assert.deepEqual(deep, []);
  });

  it('the one exception, undici\'s Pool and buildConnector without its index, is named in one module that falls back to the public entry', () => {
    // gateway/backend/engines/undici-parts.js (docs/performance.md: 4.5 MB of idle RSS);
    // tests/gateway/backend/engines/undici-parts.test.js checks the paths against the installed undici and the fallback.
    const { execFileSync } = require('node:child_process');
    const files = execFileSync('git', ['ls-files', '*.js'], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').filter((f) => !f.startsWith('tests/'));
    const naming = files.filter((f) => /['"`][a-z@][\w.-]*\/lib\//.test(require('node:fs').readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(naming, ['gateway/backend/engines/undici-parts.js']);
    const { PARTS } = require('../../gateway/backend/engines/undici-parts');
    assert.deepEqual(Object.values(PARTS).map((p) => p.split('/')[0]), ['undici', 'undici']);
  });

  it('rest-sim, a plain REST server, loads nothing of the codec; gateway-only modules live in gateway/', () => {
    const { execFileSync } = require('node:child_process');
    const loaded = execFileSync(process.execPath, ['-e', `require('./rest-sim/cli'); require('./rest-sim/server');
      process.stdout.write(JSON.stringify(Object.keys(require.cache)))`], { cwd: ROOT, encoding: 'utf8' });
    assert.deepEqual(JSON.parse(loaded).filter((f) => f.includes(`${path.sep}lib${path.sep}protocol${path.sep}`)), []);
    const fs = require('node:fs');
    for (const m of ['route-kinds', 'objects', 'log-throttle']) assert.ok(!fs.existsSync(path.join(ROOT, 'lib', `${m}.js`)), `lib/${m}.js`);
  });
});
