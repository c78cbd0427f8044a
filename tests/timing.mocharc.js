'use strict';

// `npm test`, second half: the timing-sensitive files (tests/timing.js), one at a time, nothing
// else running (see .mocharc.js for the first half).

module.exports = {
  spec: require('./timing'),
  timeout: 20000,
  reporter: 'dot',
  exit: true,
  require: ['tests/helpers/tmp.js', 'tests/helpers/priority.js'],
};
