'use strict';

// Every module of the product (gateway/, lib/) is where a reader looks for it: README's folder
// table has a row for each folder, and docs/architecture.md's module tables a row for each file.
// A file added, moved or renamed without the docs following fails here (a row naming a file that
// is gone fails tests/architecture/doc-links.test.js).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');

/** The first cells of a Markdown file's table rows that are code: `gateway/session/` -> the rest of the row. */
function rows(file) {
  const out = new Map();
  for (const line of fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n')) {
    const m = /^\| `([a-z0-9/.-]+)` \| (.*) \|$/.exec(line);
    if (m) out.set(m[1], m[2]);
  }
  return out;
}

function modules(dir, out = []) {
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (entry.isDirectory()) modules(`${dir}${entry.name}/`, out);
    else if (entry.name.endsWith('.js')) out.push(`${dir}${entry.name}`);
  }
  return out;
}

const PRODUCT = [...modules('gateway/'), ...modules('lib/')];

describe('README folder table and docs/architecture.md module tables', () => {
  it('README has a row for every folder of gateway/ and lib/', () => {
    const readme = rows('README.md');
    const folders = [...new Set(PRODUCT.map((f) => f.slice(0, f.lastIndexOf('/') + 1)))];
    assert.deepEqual(folders.filter((d) => !readme.has(d)).map((d) => `${d} (no row in README's folder table)`), []);
  });

  it('docs/architecture.md has a row for every module of gateway/ and lib/', () => {
    const documented = rows('docs/architecture.md');
    assert.deepEqual(PRODUCT.filter((f) => !documented.has(f)).map((f) => `${f} (no row in docs/architecture.md)`), []);
  });
});
