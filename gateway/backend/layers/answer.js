'use strict';

// What an answer means for its route (classify.js, pure), and what a failure tells the origin's
// figures and the log. Below it a dispatch resolves with an answer {status, text, retryAfter} or,
// when there is none, a host_error outcome; from here up, with an outcome (outcome.js).

const { KIND, REASON } = require('../outcome');
const { classify, verdictFor } = require('../classify');
const { resultOf } = require('../diagnostics');

class Answer {
  /** figures: OriginFigures; warnings: Warnings; routerGets: what the router gets while the backend fails, for the log. */
  constructor(next, { figures, warnings, routerGets }) {
    this.next = next;
    this.figures = figures;
    this.warnings = warnings;
    this.routerGets = routerGets;
  }

  dispatch(request) {
    return this.next.dispatch(request).then((res) => (res.kind !== undefined ? res : this.answered(res, request)));
  }

  answered(res, request) {
    if (request.forHandler) return this.forHandler(res, request);
    let outcome = classify(res, request.spec);
    if (outcome.kind === KIND.HOST_ERROR) outcome = this.failed(outcome, res, request.origin);
    if (res.view !== undefined) res.view.end(res.status, resultOf(outcome));
    return outcome;
  }

  /** A handler module's answer: it gets the answer whatever it is; a failure still counts for or against the origin as the route's statuses say. */
  forHandler(res, request) {
    const verdict = verdictFor(res, request.spec);
    const failure = typeof verdict === 'string' ? null : this.failed(verdict, res, request.origin);
    if (res.view !== undefined) res.view.end(res.status, failure === null ? verdict : failure.reason);
    const response = res.view === undefined ? res : { status: res.status, text: res.text, retryAfter: res.retryAfter };
    return failure === null ? { kind: KIND.OK, blame: false, response } : { ...failure, response };
  }

  /**
   * An answer that is no answer about the caller: counted against the origin, and the outcome
   * returned (refused credentials name the origin). Refused credentials are warned about, and so
   * is a 429 or 408 (or a 4xx that is a proxy's page), once per origin per Warnings' interval: a
   * 5xx is the circuit's and the health's to tell.
   */
  failed(outcome, { status }, origin) {
    if (outcome.reason === REASON.UNAUTHORIZED) {
      const named = { ...outcome, detail: `${outcome.detail} (${origin})` };
      this.figures.failed(origin, named);
      this.warnings.warn(`unauthorized ${origin}`, `backend ${origin} refused the gateway's credentials (HTTP ${status}); check backend.auth`
        + ' (or the route\'s auth): the router gets E_AG_HOST_ERROR1 for these queries');
      return named;
    }
    this.figures.failed(origin, outcome);
    if (outcome.budget !== undefined) {
      this.warnings.warn(`${outcome.budget} ${origin}`, `backend ${origin} answered ${outcome.detail}: refused unread, as parsing it would `
        + `hold every session; the router gets ${this.routerGets}. Raise ${outcome.budget} if the API's answers are that large`);
      return outcome;
    }
    if (status >= 500 || outcome.reason === REASON.BAD_JSON || outcome.reason === REASON.BAD_XML) return outcome;
    const { reason, retryAfterMs } = outcome;
    const what = status === 429 ? 'rate limited the gateway' : `answered HTTP ${status} with a body that is not the API's`;
    this.warnings.warn(`${reason} ${origin}`, `backend ${origin} ${what} (${reason}): no answer about the caller, the router gets`
      + ` ${this.routerGets}${retryAfterMs === undefined ? '' : `; its Retry-After asks for a pause of ${retryAfterMs} ms`}`);
    return outcome;
  }
}

module.exports = { Answer };
