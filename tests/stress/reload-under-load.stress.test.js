'use strict';

// The long version of tests/gateway/ops/reload.test.js's first case: 10,000 queries through two
// reloads (a good file, then one that does not parse) of a real gateway process.

const { reloadUnderLoad } = require('../helpers/reload-under-load');

describe('reload (SIGHUP) under load (stress)', function () {
  this.timeout(180_000);

  it('10,000 queries: every one answered exactly once, the session never drops, new queries see the new config; a bad file is refused', async () => {
    const s = await reloadUnderLoad(10_000);
    process.stdout.write(`      ${s.answered} of ${s.sent} answered, ${s.ok} ok, 0 reconnects\n`);
  });
});
