'use strict';

// A failed suite says what failed and how often, not only how many: "load: 1422 errors" sent an
// operator to the logs to learn that they were E_AG_HOST_ERROR1 from an open circuit.

const assert = require('node:assert/strict');
const { errorsText } = require('../../runner/suites/common');

describe('suite verdicts', () => {
  const summary = (over) => ({
    failures: {}, violations: {}, late: 0, timeout: 0, lost: 0, unsent: 0, ...over,
  });

  it('names every failure kind with its count, the largest first', () => {
    const s = summary({ failures: { E_AG_HOST_ERROR1: 1400, E_AG_HOST_ERROR2: 3 }, late: 19 });
    assert.equal(errorsText(s), '1,422 errors (E_AG_HOST_ERROR1 1,400, late 19, E_AG_HOST_ERROR2 3)'); // one number format
  });

  it('says what is counted when the suite names it', () => {
    assert.equal(errorsText(summary({ timeout: 2 }), 'queries without a QUERY_RESP in time'), '2 queries without a QUERY_RESP in time (timeout 2)');
  });
});
