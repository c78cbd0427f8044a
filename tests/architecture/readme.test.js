'use strict';

// README's folder table names every module of the product (gateway/, lib/): a file added,
// moved or renamed without the table following fails here.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');

function folderRows() {
  const rows = new Map(); // 'gateway/session/' -> the row's text
  for (const line of fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n')) {
    const m = /^\| `([a-z/-]+\/)` \| (.*) \|$/.exec(line);
    if (m) rows.set(m[1], m[2]);
  }
  return rows;
}

function foldersWithModules(dir, out = new Map()) {
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (entry.isDirectory()) foldersWithModules(`${dir}${entry.name}/`, out);
    else if (entry.name.endsWith('.js')) out.set(dir, [...(out.get(dir) || []), entry.name.slice(0, -3)]);
  }
  return out;
}

describe('README folder table', () => {
  it('has a row for every folder of gateway/ and lib/, naming each of its modules', () => {
    const rows = folderRows();
    const missing = [];
    for (const root of ['gateway/', 'lib/']) {
      for (const [dir, modules] of foldersWithModules(root)) {
        if (!rows.has(dir)) {
          missing.push(`${dir} (no row)`);
          continue;
        }
        for (const m of modules) if (!rows.get(dir).includes(`\`${m}\``)) missing.push(`${dir}${m}.js`);
      }
    }
    assert.deepEqual(missing, []);
  });
});
