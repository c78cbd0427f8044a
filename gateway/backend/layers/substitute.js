'use strict';

// The top of the backend chain: a failed outcome is answered with the query's substitute (a stale
// cached answer, else its route's fallback: substitutes.js) where it has one. The API's own 4xx
// stays an app_error unless fallback.on4xx; a router that went away gets nothing. A query whose
// route has neither cache nor fallback goes through without a continuation of its own.

const { KIND } = require('../outcome');

class Substitute {
  constructor(next) {
    this.next = next;
  }

  dispatch(ctx) {
    const { substitutes } = ctx;
    if (substitutes === null) return this.next.dispatch(ctx);
    return this.next.dispatch(ctx).then((outcome) => (outcome.kind === KIND.OK ? outcome : substitutes.forFailure(outcome) || outcome));
  }
}

module.exports = { Substitute };
