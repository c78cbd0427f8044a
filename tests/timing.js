'use strict';

// The test files whose assertions read the machine's clock under load (every query answered
// before its deadline while thousands arrive at once, one side's latency while the other bursts, a
// real nginx and tinyproxy in the way). `npm test` runs the other files in parallel, then these
// one at a time with nothing beside them: on a 2-core machine another file's load would make a
// late answer out of a scheduler's pause, and the test would measure its neighbour.
// .mocharc.js reads this list, and so does tests/timing.mocharc.js.

module.exports = [
  'tests/gateway/session/pressure.test.js',
  'tests/gateway/session/fairness.test.js',
  'tests/gateway/backend/real-backend.test.js',
  'tests/gateway/backend/hedge-figure.test.js',
  'tests/gateway/answer/hostile-answers.test.js',
  'tests/cli/sigterm.test.js',
  'tests/cli/profile-config.test.js',
  // LatesToHalf at the router and at the gateway agree only while neither process is paused near
  // LateTimeout: a scheduler's pause of the router adds lates at the router alone.
  'tests/simulator/half-hour-reconcile.test.js',
  // 1,000 connections at once beside busy sessions that must stay in time, a backend down mid-load:
  // the flood is itself the load, and another file's beside it made the flood time out.
  'tests/reliability/faults.test.js',
];
