'use strict';

// Tests mirror the source (as ws's do): a test of gateway/<folder>/ sits in tests/gateway/<folder>/,
// so "where is this tested?" is answered by the path. And no two test files share a name, so a
// name in a failure report or a doc points at one file.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const rel = (p) => path.relative(ROOT, p).split(path.sep).join('/');

function walk(dir, keep) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return [...(keep(p, true) ? [p] : []), ...walk(p, keep)];
    return keep(p, false) ? [p] : [];
  });
}

const testFiles = walk(path.join(ROOT, 'tests'), (p, dir) => !dir && p.endsWith('.test.js')).map(rel);
const gatewayTests = testFiles.filter((f) => f.startsWith('tests/gateway/'));

/** gateway/'s modules by name: 'circuit' -> ['gateway/backend'] (the folders holding a circuit.js). */
function sourceFolders() {
  const byName = new Map();
  for (const file of walk(path.join(ROOT, 'gateway'), (p, dir) => !dir && p.endsWith('.js')).map(rel)) {
    const name = path.posix.basename(file, '.js');
    byName.set(name, [...(byName.get(name) || []), path.posix.dirname(file)]);
  }
  return byName;
}

describe('tests mirror the source', () => {
  it('finds the tests it checks', () => {
    assert.ok(gatewayTests.length > 30, `${gatewayTests.length} test files under tests/gateway/`);
  });

  it('every folder under tests/gateway/ is a folder of gateway/', () => {
    const folders = walk(path.join(ROOT, 'tests', 'gateway'), (_p, dir) => dir).map(rel);
    const missing = folders.filter((f) => !fs.existsSync(path.join(ROOT, f.replace(/^tests\//, ''))));
    assert.deepEqual(missing, [], 'a test folder with no source folder of that name under gateway/');
  });

  it('a test named after a module of gateway/ sits in the folder mirroring that module\'s', () => {
    const byName = sourceFolders();
    const misplaced = [];
    for (const file of gatewayTests) {
      const name = path.posix.basename(file).replace(/(\.unit)?\.test\.js$/, '');
      const folders = byName.get(name);
      const here = path.posix.dirname(file).replace(/^tests\//, '');
      if (folders && !folders.includes(here)) misplaced.push(`${file} (the module is in ${folders.join(', ')})`);
    }
    assert.deepEqual(misplaced, []);
  });

  it('no two test files share a name', () => {
    const byName = new Map();
    for (const file of testFiles) byName.set(path.posix.basename(file), [...(byName.get(path.posix.basename(file)) || []), file]);
    const shared = [...byName.values()].filter((files) => files.length > 1).map((files) => files.join(' and '));
    assert.deepEqual(shared, []);
  });
});
