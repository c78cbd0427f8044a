'use strict';

// One test file, or a few, as `npm run test:file -- FILE...`: the suite's own timeout, scratch
// directories and reporter, without the parallel workers of .mocharc.js. A bare
// `mocha --no-config FILE` would fall back to mocha's 2 s timeout, which the end-to-end files
// (child processes, real servers) overrun on a busy machine.

const suite = require('../.mocharc.js');

module.exports = {
  timeout: suite.timeout,
  reporter: 'spec',
  exit: true,
  require: suite.require,
};
