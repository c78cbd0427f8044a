'use strict';

// Per backend origin, what its requests came to, for /status and /health: how many were sent, how
// many got no usable answer and why, the last failure and when. A failure is also published
// (ged145:backend:failure, diagnostics.js) for whoever counts them, ged145_backend_failures_total.

const { publishFailure } = require('./diagnostics');

class OriginFigures {
  /** owner: what the failure messages carry as `gateway` (diagnostics.js). */
  constructor(owner) {
    this.owner = owner;
    this.byOrigin = new Map(); // origin -> {requests, failures, byReason, lastError, lastErrorAt}
  }

  /** An origin's figures, made on first use. */
  of(origin) {
    let s = this.byOrigin.get(origin);
    if (s === undefined) {
      s = {
        requests: 0, failures: 0, byReason: {}, lastError: null, lastErrorAt: null,
      };
      this.byOrigin.set(origin, s);
    }
    return s;
  }

  /** A request is being sent to origin. */
  sent(origin) {
    this.of(origin).requests++;
  }

  /** A request to origin got no usable answer: outcome is the host_error it came to. */
  failed(origin, outcome) {
    const s = this.of(origin);
    s.failures++;
    s.byReason[outcome.reason] = (s.byReason[outcome.reason] || 0) + 1;
    s.lastError = outcome.detail ? `${outcome.reason}: ${outcome.detail}` : outcome.reason;
    s.lastErrorAt = Date.now();
    publishFailure(this.owner, origin, outcome);
  }

  /** Per origin: its figures beside its health (health: BackendHealth.originsJSON()). */
  toJSON(health) {
    const origins = {};
    for (const [origin, s] of this.byOrigin) {
      origins[origin] = {
        // An origin no query's outcome has judged yet: nothing to say it answers.
        ...(health[origin] || {
          state: 'idle', lastState: 'reachable', lastQueryAt: null, evidenceAgeS: null, routes: [],
        }),
        ...s,
        byReason: { ...s.byReason },
        lastErrorAt: s.lastErrorAt === null ? null : new Date(s.lastErrorAt).toISOString(),
      };
    }
    return origins;
  }
}

module.exports = { OriginFigures };
