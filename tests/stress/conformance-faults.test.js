'use strict';

// The full check behind the quick one in tests/tools/conformance.test.js: the whole case table
// against the test host with each of its faults (tests/helpers/conformance-host.js), every fault
// failing exactly the cases meant to catch it (tests/helpers/conformance-faults.js) and no other.
// About two minutes, so it runs with the stress suites (npm run test:stress), not in npm test.

const assert = require('node:assert/strict');
const { startConformanceHost } = require('../helpers/conformance-host');
const { FAULT_CASES } = require('../helpers/conformance-faults');
const { runSuite } = require('../../tools/conformance/run');

const KEY = Buffer.from('12345678');

describe('every fault of the conformance test host, against the whole case table', function () {
  this.timeout(600_000);

  for (const { faults, fails } of FAULT_CASES) {
    it(`${faults.join(' + ') || 'no fault'}: fails exactly ${fails.length} case(s)`, async () => {
      const host = await startConformanceHost({ faults, desKey: KEY });
      try {
        const run = await runSuite({
          target: { host: '127.0.0.1', port: host.port, tls: null }, subtype: 'lookup', slowSubtype: 'slow', failingSubtype: 'fail',
          desKey: KEY, version: 2, connectTimeoutMs: 3000,
        });
        const failed = run.results.filter((r) => r.result === 'fail' || r.result === 'non-strict');
        assert.deepEqual(failed.map((r) => r.id).sort(), [...fails].sort(), failed.map((r) => `${r.id}: ${r.observed}`).join('\n'));
        assert.ok(run.results.length >= 30);
      } finally {
        await host.close();
      }
    });
  }
});
