'use strict';

// `npm test`, first half: every test file but the stress suite's (`npm run test:stress`) and the
// timing-sensitive ones (tests/timing.js), in parallel worker processes. The second half,
// tests/timing.mocharc.js, runs those one at a time once these are done.

const timing = require('./tests/timing');

module.exports = {
  spec: ['tests/**/*.test.js'],
  ignore: ['tests/stress/**', ...timing],
  parallel: true,
  jobs: 3,
  timeout: 20000,
  reporter: 'dot',
  exit: true,
  require: ['tests/helpers/tmp.js'],
};
