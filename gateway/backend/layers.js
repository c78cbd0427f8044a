'use strict';

// A backend request's path as layers, each wrapping the next in undici's interceptor shape
// (Dispatcher.compose(): each takes the dispatch below it and gives one of its own), from the top:
//
//   Failover   the default contract's base URLs, as configured or in turn (backend.strategy);
//              a request that never reached its origin goes to the next while time is left
//   Breaker    the lane of the route on the origin: its circuit and its pace (breakers.js)
//   Answer     what the answer means for the route (classify.js, pure), and what a failure
//              tells the origin's figures and the log
//   Auth       the request's credentials; a 401 drops an OAuth2 token, and the request goes once
//              more with a new one while the deadline leaves retry.minRemainingMs
//   Transport  the engine (engines/): the origin's figures, the request's diagnostics
//              (diagnostics.js), and a failure without an answer as a host_error
//
// Each is a class with dispatch(request) -> Promise, built alone in a test with any `next`.
// Below Answer a dispatch resolves with an answer {status, text, retryAfter} or, when there is
// none, a host_error outcome; from Answer up, with an outcome (outcome.js). None rejects.
//
// A request is the engine's request (engines/index.js) with what the layers read: spec (the
// route whose statuses and format say what its answer means; for a handler module's ctx.request,
// whose handler reads the answer itself, forHandler is true), credentials (or null), deadlineAt,
// timeoutMs (a route's own), elsewhere (another origin may take it), and whose it is for the
// channels' subscribers (kind, query, route, template, attempt, retry).

const { performance } = require('node:perf_hooks');
const {
  hostError, KIND, REASON, gaveUp,
} = require('./outcome');
const { classify, verdictFor } = require('./classify');
const { sendWatched, resultOf } = require('./diagnostics');
const { failureReason } = require('./errors');
const { messageOf } = require('../../lib/errors');

const WARN_EVERY_MS = 10_000;

/** A request that surely never reached the backend (no connection, its circuit or its pace refused it): safe to send again. */
const NOT_SENT = new Set([REASON.UNREACHABLE, REASON.CIRCUIT_OPEN, REASON.PAUSED, REASON.OVER_RATE]);

/** The chain: bottom, then each layer's class wrapping the one before (compose(transport, Auth, Answer) is Answer over Auth over transport). */
function compose(bottom, ...layers) {
  return layers.reduce((next, [Layer, options]) => new Layer(next, options), bottom);
}

/**
 * Whether a failed request blames the origin. Gave up waiting (the query's deadline, a route's
 * timeoutMs): only when the request was on the wire for at least half of that time and the
 * deadline timer fired on time. A request that waited for a free connection, or whose answer may
 * have sat unread while the event loop was busy, says nothing about the backend. The router going
 * away never does. Anything else (refused, reset, too large, a transport error) does.
 */
function blames(err, budgetMs) {
  if (err.reason === REASON.ABORTED) return false;
  if (gaveUp(err.reason)) return !err.late && err.onWireMs >= budgetMs / 2;
  return true;
}

/** Warnings at most once per WARN_EVERY_MS for their kind, each saying how many were folded since the last. */
class Warnings {
  constructor(log) {
    this.log = log;
    this.at = new Map(); // kind -> {at, folded}
  }

  every(kind, message) {
    const now = Date.now();
    const w = this.at.get(kind);
    if (w !== undefined && now - w.at < WARN_EVERY_MS) {
      w.folded++;
      return;
    }
    this.log.warn(message, w !== undefined && w.folded > 0 ? { sinceLastLine: w.folded } : {});
    this.at.set(kind, { at: now, folded: 0 });
  }
}

/** The engine, at the bottom: figures: OriginFigures; deadlineMs: the query deadline, for blames(). */
class Transport {
  constructor(engine, {
    owner, figures, warnings, deadlineMs,
  }) {
    this.engine = engine;
    this.owner = owner;
    this.figures = figures;
    this.warnings = warnings;
    this.deadlineMs = deadlineMs;
  }

  dispatch(request) {
    this.figures.sent(request.origin);
    return sendWatched(this.engine, this.owner, request).then(undefined, (err) => this.noAnswer(err, request));
  }

  /** A request that got no answer: the engine's reason, as evidence against the origin or not (blames). */
  noAnswer(err, request) {
    const reason = err.reason || REASON.ERROR;
    const blame = blames(err, reason === REASON.TIMEOUT ? request.timeoutMs : this.deadlineMs);
    const detail = err.detail ? `${err.detail} (${request.origin})` : null;
    if (request.observer !== null) request.observer.error(err, reason);
    const outcome = hostError(reason, `backend ${reason.replace(/_/g, ' ')}`, blame, detail);
    if (reason !== REASON.ABORTED) this.figures.failed(request.origin, outcome);
    if (reason === REASON.TLS_ERROR) {
      this.warnings.every(`tls ${request.origin}`, `backend TLS handshake with ${request.origin} failed: ${err.detail}; `
        + 'check backend.tls (ca for a private CA, servername for another name) and the backend\'s certificate');
    }
    return outcome;
  }
}

/** The request's credentials (request.credentials: auth.js, or null), and the 401 retry. retry: availability's {minRemainingMs}. */
class Auth {
  constructor(next, { retry, figures }) {
    this.next = next;
    this.retry = retry;
    this.figures = figures;
  }

  dispatch(request) {
    if (request.credentials === null) return this.next.dispatch(request);
    return this.authorized(request, request.credentials);
  }

  async authorized(request, credentials) {
    for (let attempt = 0; ; attempt++) {
      let used = credentials.header();
      if (used === null) {
        try {
          used = await credentials.wait(request.signal);
        } catch (err) {
          return this.noCredentials(err, request);
        }
      }
      request.headers = { ...request.headers, authorization: used };
      const res = await this.next.dispatch(request);
      if (res.kind !== undefined || !this.again(res, attempt, credentials, used, request)) return res;
    }
  }

  /** A 401 to an OAuth2 token, the first: that token is dropped, and the request goes once more with a new one if time is left. */
  again({ status }, attempt, credentials, used, request) {
    if (status !== 401 || attempt > 0 || !credentials.refreshes || request.deadlineAt - performance.now() < this.retry.minRemainingMs) return false;
    if (!credentials.renew(used)) return false;
    if (request.observer !== null) request.observer.end(401, REASON.UNAUTHORIZED);
    request.attempt++;
    request.retry = 'auth';
    return true;
  }

  /** No credentials for a request: the token endpoint failed (auth_failed, not the API's failure), or the query's time ran out waiting. */
  noCredentials(err, request) {
    if (request.signal.aborted) {
      const reason = failureReason(null, request.signal);
      return hostError(reason, `backend ${reason.replace(/_/g, ' ')} (waiting for a token)`);
    }
    const outcome = hostError(REASON.AUTH_FAILED, 'backend token request failed', false, messageOf(err));
    this.figures.failed(request.origin, outcome);
    return outcome;
  }
}

/** What an answer means for its route (classify.js), and what a failure tells the figures and the log. instead: what the router gets meanwhile. */
class Answer {
  constructor(next, { figures, warnings, instead }) {
    this.next = next;
    this.figures = figures;
    this.warnings = warnings;
    this.instead = instead;
  }

  dispatch(request) {
    return this.next.dispatch(request).then((res) => (res.kind !== undefined ? res : this.answered(res, request)));
  }

  answered(res, request) {
    if (request.forHandler) return this.forHandler(res, request);
    const outcome = classify(res, request.spec);
    if (outcome.kind === KIND.HOST_ERROR) this.failed(outcome, res, request.origin);
    if (request.observer !== null) request.observer.end(res.status, resultOf(outcome));
    return outcome;
  }

  /** A handler module's answer: it gets the answer whatever it is; a failure still counts for or against the origin as the route's statuses say. */
  forHandler(res, request) {
    const verdict = verdictFor(res, request.spec);
    const failure = typeof verdict === 'string' ? null : verdict;
    if (failure !== null) this.failed(failure, res, request.origin);
    if (request.observer !== null) request.observer.end(res.status, failure === null ? verdict : failure.reason);
    return failure === null ? { kind: KIND.OK, blame: false, response: res } : { ...failure, response: res };
  }

  /**
   * An answer that is no answer about the caller: counted against the origin. Refused credentials
   * are warned about, and so is a 429 or 408 (or a 4xx that is a proxy's page), once per
   * WARN_EVERY_MS per origin: a 5xx is the circuit's and the health's to tell.
   */
  failed(outcome, { status }, origin) {
    if (outcome.reason === REASON.UNAUTHORIZED) {
      outcome.detail = `${outcome.detail} (${origin})`;
      this.figures.failed(origin, outcome);
      this.warnings.every(`unauthorized ${origin}`, `backend ${origin} refused the gateway's credentials (HTTP ${status}); check backend.auth`
        + ' (or the route\'s auth): the router gets E_AG_HOST_ERROR1 for these queries');
      return;
    }
    this.figures.failed(origin, outcome);
    if (outcome.budget !== undefined) {
      this.warnings.every(`${outcome.budget} ${origin}`, `backend ${origin} answered ${outcome.detail}: refused unread, as parsing it would `
        + `hold every session; the router gets ${this.instead}. Raise ${outcome.budget} if the API's answers are that large`);
      return;
    }
    if (status >= 500 || outcome.reason === REASON.BAD_JSON || outcome.reason === REASON.BAD_XML) return;
    const { reason, retryAfterMs } = outcome;
    const what = status === 429 ? 'rate limited the gateway' : `answered HTTP ${status} with a body that is not the API's`;
    this.warnings.every(`${reason} ${origin}`, `backend ${origin} ${what} (${reason}): no answer about the caller, the router gets`
      + ` ${this.instead}${retryAfterMs === undefined ? '' : `; its Retry-After asks for a pause of ${retryAfterMs} ms`}`);
  }
}

/** The lane of the request's route on its origin (breakers.js): a call it refuses is never sent. */
class Breaker {
  constructor(next, breakers) {
    this.next = next;
    this.breakers = breakers;
  }

  dispatch(request) {
    return this.breakers.run(request.origin, request.query.subtype, () => this.next.dispatch(request), request.elsewhere);
  }
}

/**
 * The default contract over its base URLs (targets: [{origin, basePath}]): in order (failover) or
 * from the next in turn (balance). An origin whose circuit is open is skipped (a dead first origin
 * costs no query while another is healthy; if all are, the first is sent anyway), and a request
 * that never reached its origin (refused, unresolvable) goes to the next one while
 * retry.minRemainingMs of the deadline is left. dispatch(request): request.path is the path below
 * a base URL.
 */
class Failover {
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
    const order = this.candidates();
    if (order.length > 1) return this.inOrder(request, order);
    const [{ origin, basePath }] = order; // the request is this query's own: set in place
    request.origin = origin;
    request.path = basePath + request.path;
    request.template = basePath + request.template;
    return this.next.dispatch(request);
  }

  async inOrder(request, order) {
    const { subtype } = request.query;
    const tries = order.filter((t) => !this.breakers.isOpen(t.origin, subtype));
    if (tries.length === 0) tries.push(order[0]);
    let outcome;
    for (let i = 0; i < tries.length; i++) {
      const last = i === tries.length - 1 || !this.retry.enabled;
      outcome = await this.next.dispatch(at(request, tries[i], i + 1, !last));
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

/** A copy of the request for one base URL: its attempt-th of the query (the next origin's after the first); elsewhere: another origin may take it. */
function at(request, { origin, basePath }, attempt, elsewhere) {
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

module.exports = {
  compose, Transport, Auth, Answer, Breaker, Failover, Warnings, blames, NOT_SENT,
};
