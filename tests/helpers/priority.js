'use strict';

// The timing half of `npm test` (tests/timing.mocharc.js) asserts answers within the router's
// deadlines while thousands of queries arrive at once. Its files run one at a time so that no other
// test file is beside them; this gives them the CPU before anything else on the machine too (a CI
// runner is rarely idle: another job, a build, a busy loop). Niceness -10 is inherited by every
// child the tests start (gateways, rest-sim, nginx, tinyproxy, Redis): a neighbour at the default
// priority then runs only on the CPU they leave, as an operator's unit with Nice= would. Without
// the right to raise priority (not root, no CAP_SYS_NICE) the tests run as they are, and say so.

const os = require('node:os');

const NICENESS = -10;

try {
  if (os.getPriority() > NICENESS) os.setPriority(NICENESS);
} catch (err) {
  process.stderr.write(`timing tests: running at the default priority (${(err.info && err.info.code) || err.code}: raising it needs root or CAP_SYS_NICE); `
    + 'other load on this machine can make their deadlines fail\n');
}
