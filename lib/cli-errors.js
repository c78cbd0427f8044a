'use strict';

/** A bad command line: the CLI prints the command's usage and exits 2. */
class UsageError extends Error {
  constructor(message) {
    super(message);
    this.usage = true;
  }
}

/** An operator-facing failure (bad config file, port in use): one clear line, exit 1, no stack. */
class OperatorError extends Error {
  constructor(message) {
    super(message);
    this.expected = true;
  }
}

module.exports = { UsageError, OperatorError };
