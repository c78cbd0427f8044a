'use strict';

// The diagnostics channels the code publishes are the ones docs/diagnostics.md lists, and the other
// way round: the list is a public contract (traces, metrics and users' own subscribers read it).
// A channel name is written once, as a string literal 'ged145:...' in gateway/ or lib/.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..', '..');
const NAME = /['"`](ged145:[a-z][a-z:-]*[a-z])['"`]/g;

function namesInCode() {
  const files = execFileSync('git', ['ls-files', 'gateway', 'lib'], { cwd: ROOT, encoding: 'utf8' })
    .trim().split('\n').filter((f) => f.endsWith('.js') && !f.startsWith('gateway/ops/'));
  const found = new Map(); // name -> files
  for (const f of files) {
    for (const [, name] of fs.readFileSync(path.join(ROOT, f), 'utf8').matchAll(NAME)) {
      found.set(name, [...(found.get(name) || []), f]);
    }
  }
  return found;
}

function namesInDoc() {
  const text = fs.readFileSync(path.join(ROOT, 'docs', 'diagnostics.md'), 'utf8');
  return [...text.matchAll(/^\| `(ged145:[^`]+)` \|/gm)].map((m) => m[1]);
}

describe('diagnostics channels: the code and docs/diagnostics.md list the same ones', () => {
  it('every channel the core names is documented, and every documented one is named in the core', () => {
    const code = [...namesInCode().keys()].sort();
    const doc = namesInDoc().sort();
    assert.deepEqual(code, doc);
  });

  it('each channel name is written in one place only', () => {
    const twice = [...namesInCode()].filter(([, files]) => files.length > 1);
    assert.deepEqual(twice, []);
  });
});
