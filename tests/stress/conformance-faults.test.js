'use strict';

// The full check behind the quick one in tests/tools/conformance.test.js: the whole case table
// against the test host with each of its faults (tests/helpers/conformance-host.js), every fault
// failing exactly the cases meant to catch it (tests/helpers/conformance-faults.js) and no other.
// The faults run side by side (each its own host and port): about two minutes, so it runs with
// the stress suites (npm run test:stress), not in npm test.

const assert = require('node:assert/strict');
const { startConformanceHost } = require('../helpers/conformance-host');
const { FAULT_CASES } = require('../helpers/conformance-faults');
const { runSuite } = require('../../tools/conformance/run');

const KEY = Buffer.from('12345678');

async function failsOf(faults) {
  const host = await startConformanceHost({ faults, desKey: KEY });
  try {
    const run = await runSuite({
      target: { host: '127.0.0.1', port: host.port, tls: null }, subtype: 'lookup', slowSubtype: 'slow', failingSubtype: 'fail',
      desKey: KEY, version: 2, connectTimeoutMs: 3000,
    });
    assert.ok(run.results.length >= 30);
    return run.results.filter((r) => r.result === 'fail' || r.result === 'non-strict');
  } finally {
    await host.close();
  }
}

describe('every fault of the conformance test host, against the whole case table', function () {
  this.timeout(600_000);

  it('each fault fails exactly the cases meant to catch it, and no fault fails none', async () => {
    const rows = await Promise.all(FAULT_CASES.map(async ({ faults, fails }) => ({ faults, fails, failed: await failsOf(faults) })));
    const wrong = rows.filter((r) => JSON.stringify(r.failed.map((f) => f.id).sort()) !== JSON.stringify([...r.fails].sort()));
    assert.deepEqual(wrong.map((r) => `${r.faults.join(' + ') || 'no fault'}: ${r.failed.map((f) => `${f.id} (${f.observed})`).join('; ')}`), []);
    assert.ok(rows.every((r) => r.faults.length === 0 || r.fails.length > 0));
  });
});
