'use strict';

// The lane of the request's route on its origin (breakers.js): its circuit and its pace. A call
// it refuses is never sent, and answers circuit_open, paused or over_rate.

class Breaker {
  /** breakers: the backend's Breakers. */
  constructor(next, breakers) {
    this.next = next;
    this.breakers = breakers;
  }

  dispatch(request) {
    return this.breakers.run(request.origin, request.query.subtype, () => this.next.dispatch(request), request.elsewhere);
  }
}

module.exports = { Breaker };
