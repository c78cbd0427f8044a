'use strict';

// The logger a backend part gets where no log is wanted (a unit test, a bench): every part is
// given a logger, so none of them asks whether it has one.

const SILENT_LOG = Object.freeze({
  debug() {},
  info() {},
  warn() {},
  error() {},
  isLevelEnabled: () => false,
});

module.exports = { SILENT_LOG };
