'use strict';

// Every name a module of gateway/ or lib/ exports has a user outside its own file (the product,
// a tool, a bench or a test): an export nobody imports is dead code or a private name made public
// by accident. The codec (lib/protocol/) is the package's public API (docs/codec.md) and is left
// out: integrators are its users. Modules that export one value (`module.exports = X`) are read as
// one name.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const SEARCHED = ['gateway', 'lib', 'rest-sim', 'simulator', 'runner', 'tools', 'bin', 'bench', 'tests'];

function jsFiles(dir, out = []) {
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') jsFiles(rel, out);
    } else if (e.name.endsWith('.js')) out.push(rel);
  }
  return out;
}

/** The names in a file's `module.exports = { a, b: c, ... }`, or [] when it exports otherwise. */
function exportedNames(source) {
  const m = /module\.exports\s*=\s*\{([^}]*)\}/s.exec(source);
  if (m === null) return [];
  return m[1].split(',').map((item) => item.trim().split(':')[0].trim()).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n));
}

/** [file, name] of every export with no user outside its file, given {file: source}. */
function unusedExports(sources, owned) {
  const found = [];
  for (const file of owned) {
    for (const name of exportedNames(sources.get(file))) {
      const word = new RegExp(`\\b${name.replace(/\$/g, '\\$')}\\b`);
      if (![...sources].some(([other, text]) => other !== file && word.test(text))) found.push(`${file}: ${name}`);
    }
  }
  return found;
}

describe('exports', () => {
  it('every export of gateway/ and lib/ (but the codec, the public API) is used outside its file', () => {
    const files = SEARCHED.flatMap((d) => jsFiles(d));
    const sources = new Map(files.map((f) => [f, fs.readFileSync(path.join(ROOT, f), 'utf8')]));
    const owned = files.filter((f) => (f.startsWith(`gateway${path.sep}`) || f.startsWith(`lib${path.sep}`)) && !f.startsWith(path.join('lib', 'protocol')));
    assert.deepEqual(unusedExports(sources, owned), []);
  });

  it('the rule finds an export nobody imports, and not one that is imported', () => {
    const sources = new Map([
      ['lib/a.js', 'function used() {}\nfunction unused() {}\nmodule.exports = { used, unused };'],
      ['gateway/b.js', "const { used } = require('../lib/a');"],
    ]);
    assert.deepEqual(unusedExports(sources, ['lib/a.js']), ['lib/a.js: unused']);
  });
});
