'use strict';

// A reload releases the handler it replaces: a real gateway process (--expose-gc) whose handler
// holds a 4 MB table, SIGHUP after SIGHUP, its heap read after a full collection by the handler
// itself through a real router session. Each reload loads the table afresh; the old copy must be
// collected once its queries are over. tests/stress/reload-release.stress.test.js does 100 reloads.

const assert = require('node:assert/strict');
const { reloadMany } = require('../../helpers/reload-heap');

const MB = 1024 * 1024;

describe('reload releases the handler it replaces', function () {
  this.timeout(120_000);

  // 20 MB for 100 reloads, in proportion: the copies kept before this was fixed grew it by 4 MB each.
  it('10 reloads of a handler holding a 4 MB table: the heap grows by less than 2 MB', async () => {
    const { before, after } = await reloadMany(10);
    const growth = (after - before) / MB;
    assert.ok(growth < 2, `heap ${(before / MB).toFixed(1)} MB -> ${(after / MB).toFixed(1)} MB after 10 reloads (+${growth.toFixed(1)} MB)`);
  });
});
