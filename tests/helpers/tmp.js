'use strict';

// Scratch directories for tests, all removed when the run ends (a mocha root hook: .mocharc.json
// and the test:stress script load this file), so a test run leaves nothing in /tmp.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const made = [];

/** A new empty directory under the system temp dir, removed after the whole run. */
function tmpDir(prefix = 'ged145-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

function removeAll() {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

module.exports = { tmpDir, mochaHooks: { afterAll: removeAll } };
