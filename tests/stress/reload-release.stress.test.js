'use strict';

// The full size of tests/gateway/ops/reload-release.test.js: 100 SIGHUPs to a real gateway whose
// handler holds a 4 MB table leave its heap (after a full collection) within 20 MB of where it started.

const assert = require('node:assert/strict');
const { reloadMany } = require('../helpers/reload-heap');

const MB = 1024 * 1024;

describe('reload releases the handler it replaces (stress)', function () {
  this.timeout(300_000);

  it('100 reloads of a handler holding a 4 MB table: the heap grows by less than 20 MB', async () => {
    const { before, after } = await reloadMany(100);
    const growth = (after - before) / MB;
    process.stdout.write(`      heap ${(before / MB).toFixed(1)} MB -> ${(after / MB).toFixed(1)} MB after 100 reloads (+${growth.toFixed(1)} MB)\n`);
    assert.ok(growth < 20, `+${growth.toFixed(1)} MB`);
  });
});
