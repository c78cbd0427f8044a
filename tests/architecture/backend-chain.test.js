'use strict';

// The backend is one chain (gateway/backend/backend.js draws it): one file per layer under
// gateway/backend/layers/, each exporting one class with dispatch(), none requiring another, the
// chain composed in one place; and a layer passes on a new request or context rather than editing
// the one it was given. Read from the source, as a require or an assignment is what ties two
// objects together.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const LAYERS = path.join(ROOT, 'gateway', 'backend', 'layers');
const layerFiles = fs.existsSync(LAYERS) ? fs.readdirSync(LAYERS).filter((f) => f.endsWith('.js')).sort() : [];

function sources(dir) {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return sources(rel);
    return e.name.endsWith('.js') ? [rel] : [];
  });
}

/** A file's code lines (comments dropped), with where each is. */
function codeLines(rel) {
  return fs.readFileSync(path.join(ROOT, rel), 'utf8').split('\n')
    .map((text, i) => ({ where: `${rel}:${i + 1}`, text: text.replace(/\/\/.*$/, '') }))
    .filter(({ text }) => !/^\s*\*|^\s*\/\*\*?/.test(text));
}

const product = [...sources('gateway'), ...sources('lib')];

describe('the backend is one chain of layers', () => {
  it('has a file for each layer', () => {
    assert.deepEqual(layerFiles, [
      'answer.js', 'auth.js', 'breaker.js', 'cache.js', 'canary.js', 'failover.js', 'route.js', 'shadow.js', 'substitute.js', 'transport.js',
    ]);
  });

  it('each layer file exports one class, with dispatch()', () => {
    const wrong = [];
    for (const file of layerFiles) {
      const exported = Object.values(require(path.join(LAYERS, file)));
      const ok = exported.length === 1 && typeof exported[0] === 'function' && /^class\b/.test(String(exported[0]))
        && typeof exported[0].prototype.dispatch === 'function';
      if (!ok) wrong.push(file);
    }
    assert.deepEqual(wrong, []);
  });

  it('no layer requires another layer', () => {
    const crossing = layerFiles.flatMap((file) => codeLines(`gateway/backend/layers/${file}`)
      .filter(({ text }) => /require\(['"]\.\/|require\(['"][./]*layers\//.test(text)).map(({ where, text }) => `${where}: ${text.trim()}`));
    assert.deepEqual(crossing, []);
  });

  it('compose( is written in one file of the product', () => {
    const files = product.filter((rel) => codeLines(rel).some(({ text }) => /\bcompose\(/.test(text)));
    assert.deepEqual(files, ['gateway/backend/backend.js']);
  });

  it('nothing assigns to a field of another object through ctx., request. or h.', () => {
    const writes = product.flatMap((rel) => codeLines(rel)
      .filter(({ text }) => /\b(ctx|request|h)\.[\w$.]+\s*([-+*/]?=(?![=>])|\+\+|--)/.test(text))
      .map(({ where, text }) => `${where}: ${text.trim()}`));
    assert.deepEqual(writes, []);
  });
});

describe('every fact is written once', () => {
  it('outcome labels are spelt only in backend/outcome.js: the others read its LABEL, FAILED_LABELS and isFailed', () => {
    const spelt = product.filter((rel) => rel !== 'gateway/backend/outcome.js').flatMap((rel) => codeLines(rel)
      .filter(({ text }) => /['"](host_error|app_error|lost_router_gone|invalid_key)['"]/.test(text))
      .map(({ where, text }) => `${where}: ${text.trim()}`));
    assert.deepEqual(spelt, []);
  });

  it('the exports nobody calls are gone', () => {
    const dead = [
      ['gateway/backend/abort.js', 'isDeadline'],
      ['lib/query-fields.js', 'isTarget'],
    ].filter(([rel, name]) => name in require(path.join(ROOT, rel)));
    assert.deepEqual(dead, []);
  });
});

describe('objects keep their own fields', () => {
  it('no helper is handed its whole owner (new X(this, ...)): it gets the values and calls it needs', () => {
    const handed = product.flatMap((rel) => codeLines(rel).flatMap(({ text }) => [...text.matchAll(/new ([A-Z]\w*)\(this\b(?!\.)/g)]
      .map((m) => `${rel}: ${m[1]}`)));
    assert.deepEqual(handed, []);
  });

  it('nothing hangs a field on a socket or sets the gateway\'s from outside: what is kept on a socket is under a symbol', () => {
    const writes = product.flatMap((rel) => codeLines(rel)
      .filter(({ text }) => /\b(socket|raw|gateway)\.[\w$]+\s*=(?![=>])/.test(text))
      .map(({ where, text }) => `${where}: ${text.trim()}`));
    assert.deepEqual(writes, []);
  });

  // Node's private fields change between releases without notice. Those left are the CommonJS
  // loader's (config/routes.js compiles a handler module from text read once): a require made by
  // Module.createRequire records the modules it loads under a module of its own, not the handler's,
  // and the reload finds the user's modules through the handler's `children`. vm.compileFunction
  // with the module's public require was tried and refused: an ES-module handler (which
  // Module#_compile loads on Node 20.19+) no longer loads, require.extensions is missing,
  // require.resolve ignores module.paths, import() needs Node 20.12 and prints an
  // ExperimentalWarning, and loader hooks (nyc, @babel/register) are skipped. Named so that no
  // other joins them.
  const PRIVATE_LEFT = [
    'gateway/config/routes.js: _compile',
    'gateway/config/routes.js: _nodeModulePaths',
  ];

  it('reads no private field of Node\'s objects beyond those named', () => {
    const NODE_PRIVATE = /\._(parent|compile|nodeModulePaths|resolveFilename|load|cache|handle|readableState|writableState|events|tlsOptions|secureContext|sockname|peername|pendingData|server|connections)\b/g;
    const used = product.flatMap((rel) => codeLines(rel).flatMap(({ text }) => [...new Set([...text.matchAll(NODE_PRIVATE)].map((m) => `${rel}: _${m[1]}`))]));
    assert.deepEqual(used.sort(), PRIVATE_LEFT);
  });
});
