'use strict';

// The default contract over its base URLs (targets: [{origin, basePath}]): in order (failover) or
// from the next in turn (balance). An origin whose circuit is open is skipped (a dead first origin
// costs no query while another is healthy; if all are, the first is sent anyway), and a request
// that never reached its origin (refused, unresolvable) goes to the next one while
// retry.minRemainingMs of the deadline is left. A contract request comes with no origin and its
// path below a base URL; a REST route's or a handler's request has its origin and passes through.

const { performance } = require('node:perf_hooks');
const { REASON } = require('../outcome');

/** A request that surely never reached the backend (no connection, its circuit or its pace refused it): safe to send again. */
const NOT_SENT = new Set([REASON.UNREACHABLE, REASON.CIRCUIT_OPEN, REASON.PAUSED, REASON.OVER_RATE]);

class Failover {
  /** targets: backend.url's base URLs; strategy: backend.strategy; retry: availability's; breakers: to skip an open circuit. */
  constructor(next, {
    targets, strategy, retry, breakers, log,
  }) {
    this.next = next;
    this.targets = targets;
    this.strategy = strategy;
    this.retry = retry;
    this.breakers = breakers;
    this.log = log;
    this.nextTarget = 0; // round robin position for 'balance'
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
    if (order.length > 1) return this.inOrder(request, order);
    return this.next.dispatch(toTarget(request, order[0], 1, false));
  }

  async inOrder(request, order) {
    const { subtype } = request.query;
    const tries = order.filter((t) => !this.breakers.isOpen(t.origin, subtype));
    if (tries.length === 0) tries.push(order[0]);
    let outcome;
    for (let i = 0; i < tries.length; i++) {
      const last = i === tries.length - 1 || !this.retry.enabled;
      outcome = await this.next.dispatch(toTarget(request, tries[i], i + 1, !last));
      if (last || !NOT_SENT.has(outcome.reason) || request.deadlineAt - performance.now() < this.retry.minRemainingMs) return outcome;
      if (this.log.isLevelEnabled('debug')) {
        this.log.debug('backend retry on the next origin', {
          from: tries[i].origin, reason: outcome.reason, cause: outcome.detail, invokeId: request.query.invokeId,
        });
      }
    }
    return outcome;
  }
}

/** The request for one base URL: the query's attempt-th (the next origin's after the first); elsewhere: another origin may take it. */
function toTarget(request, { origin, basePath }, attempt, elsewhere) {
  return {
    ...request,
    origin,
    path: basePath + request.path,
    template: basePath + request.template,
    attempt,
    retry: attempt === 1 ? null : 'failover',
    elsewhere,
  };
}

module.exports = { Failover };
