'use strict';

// Shadow traffic (routes.<subtype>.shadow): once a sampled query's live outcome is known, the same
// query goes to the route's candidate (its own chain: its circuits and figures are its own), and
// the two are compared on what the router would have received (shadow-compare.js). The live outcome
// goes up at once, untouched: the shadow call starts after this turn of the event loop has written
// its replies, under its own deadline (deadlineMs, as a live query's), and at most maxInFlight of
// them are out at a time; one over the cap is not sent and is counted as dropped. A candidate that
// hangs costs the gateway maxInFlight requests and their timers, never a reply.

const { performance } = require('node:perf_hooks');
const { QuerySignal, DEADLINE } = require('../abort');
const { hostError, REASON } = require('../outcome');
const { RESULT, compareOutcomes } = require('../shadow-compare');
const { channels } = require('../diagnostics');

/** Shadow calls out at a time, per gateway: beyond it a sampled query is dropped (counted). */
const MAX_IN_FLIGHT = 32;
const SHADOW_GROUP = 'shadow'; // the engine's fair share: shadow calls are one group, never a session's

class Shadow {
  /**
   * shadows: subtype -> {candidate: name, sample: 0..1, chain: the candidate's chain}; reply: the
   * gateway's fitting of an answer and an error text (shadow-compare.js); deadlineMs: each shadow
   * call's own; owner: the channels' `gateway`; random: () -> [0, 1), for the sample.
   */
  constructor(next, {
    shadows, reply, deadlineMs, owner, maxInFlight = MAX_IN_FLIGHT, random = Math.random,
  }) {
    this.next = next;
    this.shadows = shadows;
    this.reply = reply;
    this.deadlineMs = deadlineMs;
    this.owner = owner;
    this.maxInFlight = maxInFlight;
    this.random = random;
    this.inFlight = 0; // queued to start, or out
    this.queued = []; // [shadow, query, live outcome] triples, started after this turn's replies
    this.startQueued = () => this.startAll();
  }

  dispatch(ctx) {
    const q = ctx.query;
    const shadow = q.subtype === undefined ? undefined : this.shadows.get(q.subtype);
    if (shadow === undefined || (shadow.sample < 1 && this.random() >= shadow.sample)) return this.next.dispatch(ctx);
    return this.next.dispatch(ctx).then((live) => {
      this.enqueue(shadow, q, live);
      return live;
    });
  }

  enqueue(shadow, q, live) {
    if (this.inFlight >= this.maxInFlight) {
      this.publish(shadow, q, RESULT.DROPPED, []);
      return;
    }
    this.inFlight++;
    if (this.queued.push(shadow, q, live) === 3) setImmediate(this.startQueued);
  }

  startAll() {
    const due = this.queued;
    this.queued = [];
    for (let i = 0; i < due.length; i += 3) this.start(due[i], due[i + 1], due[i + 2]);
  }

  start(shadow, q, live) {
    const signal = new QuerySignal(SHADOW_GROUP);
    const timer = setTimeout(() => signal.abort(DEADLINE), this.deadlineMs);
    timer.unref();
    let call;
    try {
      call = shadow.chain.dispatch({
        query: q, signal, deadlineAt: performance.now() + this.deadlineMs, substitutes: null, kind: 'shadow',
      });
    } catch (err) {
      call = Promise.reject(err);
    }
    call.catch(() => hostError(REASON.INTERNAL, 'internal error')).then((candidate) => {
      clearTimeout(timer);
      this.inFlight--;
      const { result, differences } = compareOutcomes(live, candidate, this.reply);
      this.publish(shadow, q, result, differences);
    });
  }

  publish(shadow, query, result, differences) {
    if (channels.shadowResult.hasSubscribers) {
      channels.shadowResult.publish({
        gateway: this.owner, query, subtype: query.subtype, candidate: shadow.candidate, result, differences,
      });
    }
  }
}

module.exports = { Shadow };
