'use strict';

// The default contract over its base URLs (targets: [{origin, basePath}]): in order (failover) or
// from the next in turn (balance). An origin whose circuit is open is skipped (a dead first origin
// costs no query while another is healthy; if all are, the first is sent anyway), and a request
// that never reached its origin (refused, unresolvable) goes to the next one while
// retry.minRemainingMs of the deadline is left. A contract request comes with no origin and its
// path below a base URL; a REST route's or a handler's request has its origin and passes through.
//
// With backend.hedge, a query still unanswered after hedge.afterMs sends one more request, to the
// next origin whose circuit is not open (docs/safe-change.md, "Hedged requests"): the first
// answer wins and the other request is aborted. An answer is anything but a host_error (the
// API's own "no" included); a failure never beats a request still pending, and when both fail the
// query gets the first request's failure. The request that lost is aborted with HEDGE_LOST, which
// the engines report as `aborted`: no evidence against its origin for the circuit, the health or
// the origin's figures, as a router that went away is none. A hedge is sent only while afterMs of
// the deadline is left (it is expected to answer in about that long, and a later answer is no
// answer) and within the budget (hedge-budget.js); off (the default), none of this is on the path.

const { performance } = require('node:perf_hooks');
const { REASON, KIND } = require('../outcome');
const { QuerySignal } = require('../abort');
const { HedgeBudget } = require('../hedge-budget');
const { publishHedge } = require('../diagnostics');

/** A request that surely never reached the backend (no connection, its circuit or its pace refused it): safe to send again. */
const NOT_SENT = new Set([REASON.UNREACHABLE, REASON.CIRCUIT_OPEN, REASON.PAUSED, REASON.OVER_RATE]);

/** Why the request that lost a hedged race is aborted: the engines call it `aborted`, which blames nobody. */
const HEDGE_LOST = Object.freeze(new DOMException('another origin answered first (hedged request)', 'AbortError'));

class Failover {
  /**
   * targets: backend.url's base URLs; strategy: backend.strategy; retry: availability's; breakers:
   * to skip an open circuit; hedge: backend.hedge compiled ({afterMs, maxPercent}), or null: off;
   * owner: what the hedge channel's messages carry as `gateway`.
   */
  constructor(next, {
    targets, strategy, retry, breakers, log, hedge = null, owner = null,
  }) {
    this.next = next;
    this.targets = targets;
    this.strategy = strategy;
    this.retry = retry;
    this.breakers = breakers;
    this.log = log;
    this.nextTarget = 0; // round robin position for 'balance'
    // What each hedged query needs of the layer: its parts, not the layer. One origin: nowhere to hedge to.
    this.hedging = hedge === null || targets.length < 2 ? null : Object.freeze({
      next, retry, breakers, log, owner, afterMs: hedge.afterMs, budget: new HedgeBudget(hedge.maxPercent),
    });
  }

  /** The base URLs in the order to try: as configured (failover) or from the next in turn (balance). */
  candidates() {
    const t = this.targets;
    if (this.strategy !== 'balance' || t.length < 2) return t;
    const start = this.nextTarget;
    this.nextTarget = (start + 1) % t.length;
    return [...t.slice(start), ...t.slice(0, start)];
  }

  dispatch(request) {
    if (request.origin !== null) return this.next.dispatch(request);
    const order = this.candidates();
    if (order.length > 1) return this.hedging === null ? this.inOrder(request, this.healthy(request, order)) : this.hedged(request, order);
    return this.next.dispatch(toTarget(request, order[0], 1, null, false));
  }

  /** The origins whose circuit is not open, in order; the first one when all are. */
  healthy(request, order) {
    const { subtype } = request.query;
    const tries = order.filter((t) => !this.breakers.isOpen(t.origin, subtype));
    if (tries.length === 0) tries.push(order[0]);
    return tries;
  }

  async inOrder(request, tries) {
    let outcome;
    for (let i = 0; i < tries.length; i++) {
      const last = i === tries.length - 1 || !this.retry.enabled;
      outcome = await this.next.dispatch(toTarget(request, tries[i], i + 1, i === 0 ? null : 'failover', !last));
      if (last || !NOT_SENT.has(outcome.reason) || request.deadlineAt - performance.now() < this.retry.minRemainingMs) return outcome;
      logRetry(this.log, tries[i], outcome, request);
    }
    return outcome;
  }

  hedged(request, order) {
    this.hedging.budget.query();
    const tries = this.healthy(request, order);
    if (tries.length < 2) return this.inOrder(request, tries);
    return new HedgedQuery(this.hedging, request, tries).run();
  }
}

function logRetry(log, from, outcome, request) {
  if (log.isLevelEnabled('debug')) {
    log.debug('backend retry on the next origin', {
      from: from.origin, reason: outcome.reason, cause: outcome.detail, invokeId: request.query.invokeId,
    });
  }
}

/**
 * One query's requests while it may be hedged: the first (with its failover retries) and at most
 * one hedge, each with its own signal that follows the query's, so that the loser alone can be
 * aborted. Both take their origins from one list, so that a retry never goes where the hedge went.
 */
class HedgedQuery {
  /** parts: the layer's {next, retry, breakers, log, owner, afterMs, budget}. */
  constructor(parts, request, tries) {
    this.parts = parts;
    this.request = request;
    this.tries = tries;
    this.next = 0; // the index in tries of the next origin a request goes to
    this.attempts = 0;
    this.lanes = []; // {signal, hedge, outcome}: the first request's, then the hedge's
    this.pending = 0;
    this.timer = null;
    this.done = false;
    this.resolve = null;
    this.reject = null;
  }

  run() {
    return new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
      const { signal, deadlineAt } = this.request;
      signal.addEventListener('abort', this);
      this.start(false);
      const { afterMs } = this.parts;
      // The hedge would have less than afterMs left to answer in: none.
      if (deadlineAt - performance.now() >= 2 * afterMs) this.timer = setTimeout(hedgeDue, afterMs, this);
    });
  }

  start(hedge) {
    const lane = {
      signal: new QuerySignal(this.request.signal.group), hedge, origin: null, outcome: null,
    };
    if (this.request.signal.aborted) lane.signal.abort(this.request.signal.reason);
    this.lanes.push(lane);
    this.pending++;
    this.send(lane).then((outcome) => this.settle(lane, outcome), (err) => this.fail(err));
  }

  /** The lane's request; the first one's goes on to the next origin when it was never sent (as inOrder). */
  async send(lane) {
    const { parts, request } = this;
    const { retry } = parts;
    for (let retried = false; ; retried = true) {
      const i = this.next++;
      const elsewhere = lane.hedge || (retry.enabled && this.next < this.tries.length);
      const why = lane.hedge ? 'hedge' : retried ? 'failover' : null;
      lane.origin = this.tries[i].origin;
      const outcome = await parts.next.dispatch(toTarget(request, this.tries[i], ++this.attempts, why, elsewhere, lane.signal));
      if (lane.hedge || !elsewhere || this.done || this.next >= this.tries.length || !NOT_SENT.has(outcome.reason)
        || request.deadlineAt - performance.now() < retry.minRemainingMs) return outcome;
      logRetry(parts.log, this.tries[i], outcome, request);
    }
  }

  /** hedge.afterMs passed: one more request, if the deadline, an origin and the budget allow it. */
  sendHedge() {
    this.timer = null;
    const { parts, request } = this;
    if (this.done || request.signal.aborted || request.deadlineAt - performance.now() < parts.afterMs) return;
    const { subtype } = request.query;
    while (this.next < this.tries.length && parts.breakers.isOpen(this.tries[this.next].origin, subtype)) this.next++;
    if (this.next >= this.tries.length) return; // the first request is on the last origin already (a failover retry)
    if (!parts.budget.take()) {
      publishHedge(parts.owner, request.query, 'over_budget', this.tries[this.next].origin);
      return;
    }
    if (parts.log.isLevelEnabled('debug')) {
      parts.log.debug('backend hedge to the next origin', {
        to: this.tries[this.next].origin, afterMs: parts.afterMs, invokeId: request.query.invokeId,
      });
    }
    this.start(true);
  }

  /** A lane's outcome: an answer wins at once; a failure waits for a request still pending. */
  settle(lane, outcome) {
    lane.outcome = outcome;
    this.pending--;
    if (this.done) return;
    if (outcome.kind !== KIND.HOST_ERROR) this.finish(lane);
    else if (this.pending === 0) this.finish(this.lanes[0]);
  }

  finish(winner) {
    this.done = true;
    this.stop();
    for (const lane of this.lanes) if (lane !== winner && lane.outcome === null) lane.signal.abort(HEDGE_LOST);
    if (this.lanes.length > 1) publishHedge(this.parts.owner, this.request.query, winner.hedge ? 'won' : 'lost', this.lanes[1].origin);
    this.resolve(winner.outcome);
  }

  /** A layer below threw (a bug): the query gets it, as without hedging. */
  fail(err) {
    if (this.done) return;
    this.done = true;
    this.stop();
    for (const lane of this.lanes) if (lane.outcome === null) lane.signal.abort(HEDGE_LOST);
    this.reject(err);
  }

  stop() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.request.signal.removeEventListener('abort', this);
  }

  /** The query's signal fired (its deadline, the router gone): every request is aborted with its reason. */
  handleEvent() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const lane of this.lanes) lane.signal.abort(this.request.signal.reason);
  }
}

function hedgeDue(query) {
  query.sendHedge();
}

/**
 * The request for one base URL: the query's attempt-th; retry: why it is sent besides the first
 * (null, 'failover', 'hedge'); elsewhere: another origin may take it; signal: its own, when hedged.
 */
function toTarget(request, { origin, basePath }, attempt, retry, elsewhere, signal = request.signal) {
  return {
    ...request,
    origin,
    path: basePath + request.path,
    template: basePath + request.template,
    attempt,
    retry,
    elsewhere,
    signal,
  };
}

module.exports = { Failover };
