'use strict';

// Which cases each fault of the test host (tests/helpers/conformance-host.js) must fail, and no
// other: the table both the quick check in `npm test` and the full one in the stress run read.
// Every case watches its connections to their end, so a fault that breaks "exactly one reply"
// (twice, twiceLate, a reply of another type or with another InvokeID) fails every case that
// asks a query; the summary then shows it as one cause, not as many unrelated findings.

/** Every case that asks a query and checks the replies to it. */
const ASKS = ['framing/1', 'framing/2', 'framing/3', 'framing/4', 'framing/5', 'framing/6', 'framing/7', 'open/2', 'close/2', 'close/3',
  'query/1', 'query/2', 'query/3', 'query/4', 'query/5', 'query/6', 'query/7', 'query/8', 'query/9', 'query/10', 'query/11', 'query/12',
  'timing/1', 'timing/2', 'heartbeat/2', 'heartbeat/3', 'heartbeat/4', 'transport/1', 'transport/2', 'transport/3', 'des/1'];

const FAULT_CASES = [
  { faults: [], fails: [] },
  { faults: ['twice'], fails: ASKS },
  { faults: ['twiceLate'], fails: ASKS },
  { faults: ['heartbeatConfForQuery'], fails: ASKS },
  { faults: ['wrongInvokeId'], fails: ASKS },
  { faults: ['heartbeatsHeld'], fails: ['heartbeat/1', 'heartbeat/2', 'heartbeat/3', 'heartbeat/4'] },
  { faults: ['diesOnSplit'], fails: ['framing/1'] }, // and every case after it not run
  {
    faults: ['noReassembly'],
    fails: ['framing/1', 'framing/2', 'framing/3', 'framing/4', 'framing/6', 'framing/7', 'close/2', 'close/3', 'query/2', 'query/8', 'query/11',
      'timing/2', 'heartbeat/2', 'heartbeat/3', 'heartbeat/4', 'transport/1'],
  },
  { faults: ['late'], fails: ['timing/1', 'timing/2'] },
  { faults: ['heartbeatsBehind'], fails: ['heartbeat/4'] },
  { faults: ['heartbeatsBehind', 'noDeadline'], fails: ['timing/2', 'heartbeat/3', 'heartbeat/4'] },
  { faults: ['noDeadline'], fails: ['timing/2'] },
  {
    faults: ['lostReply'],
    fails: ['framing/1', 'framing/3', 'framing/4', 'close/2', 'close/3', 'query/2', 'timing/1', 'heartbeat/2', 'transport/1'],
  },
  { faults: ['openAlwaysAccepted'], fails: ['open/2', 'open/3', 'des/2'] },
  { faults: ['noIdleTimeout'], fails: ['open/6'] },
  { faults: ['noSessionCheck'], fails: ['open/4', 'open/5', 'close/4', 'close/5'] },
  { faults: ['closeAtOnce'], fails: ['close/2', 'close/3'] },
  { faults: ['unknownTagFatal'], fails: ['query/6'] },
  { faults: ['rejectsIgnored'], fails: ['errors/1', 'errors/2', 'errors/3', 'errors/4'] },
].map((row) => ({ ...row, fails: row.fails.map((id) => `ged145/${id}`) }));

/** A few cases the quick check runs beside a fault's expected failures: most faults leave them passing. */
const CONTROLS = ['ged145/open/1', 'ged145/param/1', 'ged145/heartbeat/1', 'ged145/framing/5'];
/** The quick check runs at most this many of a fault's expected failures (the stress run: all of them, and every other case). */
const QUICK = 3;

/** A row of FAULT_CASES as the quick check runs it: {cases (globs), fails (expected)}. */
function quick({ fails }) {
  const some = fails.slice(0, QUICK);
  return { cases: [...new Set([...some, ...CONTROLS])].join(','), fails: [...new Set([...some, ...CONTROLS.filter((c) => fails.includes(c))])] };
}

module.exports = { FAULT_CASES, CONTROLS, quick };
