'use strict';

// A canary (routes.<subtype>.canary): the queries its window picks (canary-window.js: the listed
// DN_STRINGs, a share of the others by the call's hash) are answered by the route's candidate, whose
// chain is its own (its circuits and figures never touch the live route's); the rest go on down the
// live chain. Both sides' outcomes are counted, so that a candidate failing more than the live route
// is rolled back by itself. Each query the candidate answers is published (ged145:canary:answer)
// when it is picked, so that metrics, traces, the half-hour view and the decision log mark it.

const { channels } = require('../diagnostics');

class Canary {
  /** canaries: subtype -> CanaryWindow; owner: the channels' `gateway`. */
  constructor(next, { canaries, owner }) {
    this.next = next;
    this.canaries = canaries;
    this.owner = owner;
  }

  dispatch(ctx) {
    const q = ctx.query;
    const canary = q.subtype === undefined ? undefined : this.canaries.get(q.subtype);
    if (canary === undefined) return this.next.dispatch(ctx);
    if (!canary.picks(q)) {
      return this.next.dispatch(ctx).then((outcome) => {
        canary.countLive(outcome);
        return outcome;
      });
    }
    if (channels.canaryAnswer.hasSubscribers) {
      channels.canaryAnswer.publish({
        gateway: this.owner, query: q, subtype: q.subtype, candidate: canary.candidate,
      });
    }
    return canary.chain.dispatch(ctx).then((outcome) => {
      canary.countCandidate(outcome);
      return outcome;
    });
  }
}

module.exports = { Canary };
