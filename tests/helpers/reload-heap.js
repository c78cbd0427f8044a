'use strict';

// SIGHUP after SIGHUP to a real gateway process (--expose-gc) whose handler holds a 4 MB table
// (tests/fixtures/handlers/big-table.js), its heap read after a full collection by the handler
// itself through a real router session.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { WireClient } = require('./wire');
const { spawnCli, BIN } = require('./spawn');
const { tmpDir } = require('./tmp');

const HANDLER = path.join(__dirname, '..', 'fixtures', 'handlers', 'big-table.js');

/** Reloads `count` times; resolves {before, after} heap bytes (after a full collection). */
async function reloadMany(count) {
  const file = path.join(tmpDir(), 'gateway.json');
  fs.writeFileSync(file, JSON.stringify({ routes: { table: { module: HANDLER } } }));
  const gw = spawnCli([], {
    cmdArgs: ['--expose-gc', BIN, 'gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json'],
  });
  let client = null;
  try {
    const { port } = await gw.ready();
    client = await WireClient.connect(Number(port));
    await client.open();
    let id = 10;
    const heap = async () => {
      const invokeId = ++id;
      client.query(invokeId, { subtype: 'table', ced: 'heap' });
      const r = await client.waitFor((m) => m.invokeId === invokeId, 10_000);
      assert.equal(r.status, 0);
      return Number(r.vars[1]);
    };
    // A query on the first copy, so that the table has been used, then the baseline.
    client.query(++id, { subtype: 'table', clid: '7' });
    const before = await heap();
    const reloaded = () => (gw.out + gw.err).split('configuration reloaded').length - 1;
    for (let i = 1; i <= count; i++) {
      gw.kill('SIGHUP');
      while (reloaded() < i) await new Promise((r) => { setTimeout(r, 5); });
      client.query(++id, { subtype: 'table', clid: String(i) }); // each copy answers a query
    }
    // The replaced backends close deadlineMs + 1 s after their reload (server.js): then nothing holds the old copies.
    await new Promise((r) => { setTimeout(r, 1600); });
    const after = await heap();
    return { before, after };
  } finally {
    if (client) client.close();
    gw.kill('SIGTERM');
    await gw.exited;
  }
}

module.exports = { reloadMany };
