'use strict';

// A router can provoke some log lines once per message (a bad frame, a refused version, a
// PARAM_REQ, a field that does not decrypt). Each such kind is written for its first FIRST
// occurrences on a session, then once every EVERY, with the running count in the line, so one
// connection cannot flood the log.

const FIRST = 10;
const EVERY = 1000;

class LogThrottle {
  constructor(first = FIRST, every = EVERY) {
    this.first = first;
    this.every = every;
    this.counts = new Map();
  }

  /** Counts one occurrence of `kind`; returns the count when this one should be logged, else 0. */
  hit(kind) {
    const n = (this.counts.get(kind) || 0) + 1;
    this.counts.set(kind, n);
    return n <= this.first || n % this.every === 0 ? n : 0;
  }

  count(kind) {
    return this.counts.get(kind) || 0;
  }
}

module.exports = { LogThrottle };
