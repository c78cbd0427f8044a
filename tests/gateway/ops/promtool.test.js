'use strict';

// /metrics as Prometheus itself judges it: `promtool check metrics` (Debian's prometheus package;
// .ci/run installs it). Linting catches what a scrape would accept and a query would trip on, such
// as a gauge named like a counter.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const { WireClient } = require('../../helpers/wire');
const { startStack } = require('../../helpers/stack');

describe('/metrics passes promtool check metrics', function () {
  this.timeout(20_000);

  it('a gateway with traffic, a cache and a circuit: no problem reported', async () => {
    assert.equal(spawnSync('promtool', ['--version']).status, 0, 'promtool is needed (apt-get install prometheus; .ci/run does it)');
    const stack = await startStack({ gateway: { cache: { ttlMs: 1000 } } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      c.query(2, { subtype: 'echo', clid: '5551' });
      c.query(3, { subtype: 'fail' });
      await c.waitForCount(3);
      const text = await (await fetch(`http://127.0.0.1:${stack.adminPort}/metrics`)).text();
      assert.match(text, /^ged145_cache_entries 1$/m);
      assert.match(text, /^nodejs_active_handles\{type="/m, 'the active handles are still there, by type');
      const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}`);
    } finally {
      c.close();
      await stack.stop();
    }
  });
});
