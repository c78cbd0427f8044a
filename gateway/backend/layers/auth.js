'use strict';

// The request's credentials (request.credentials: auth.js, or null) as its authorization header,
// and the 401 retry: a 401 to an OAuth2 token drops that token, and the request goes once more
// with a new one while the deadline leaves retry.minRemainingMs. Each request it sends is a new
// one ({...request, headers}): the route's headers are shared by all its requests.

const { performance } = require('node:perf_hooks');
const { hostError, REASON } = require('../outcome');
const { failureReason } = require('../errors');
const { messageOf } = require('../../../lib/errors');

class Auth {
  /** retry: availability's {minRemainingMs}; figures: OriginFigures. */
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
    let sent = request;
    for (let attempt = 0; ; attempt++) {
      let used = credentials.header();
      if (used === null) {
        try {
          used = await credentials.wait(request.signal);
        } catch (err) {
          return this.noCredentials(err, request);
        }
      }
      sent = { ...sent, headers: { ...request.headers, authorization: used } };
      const res = await this.next.dispatch(sent);
      if (res.kind !== undefined || !this.tokenRefused(res, attempt, credentials, used, request)) return res;
      if (res.view !== undefined) res.view.end(401, REASON.UNAUTHORIZED);
      sent = { ...sent, attempt: sent.attempt + 1, retry: 'auth' };
    }
  }

  /** A 401 to an OAuth2 token, the first: that token is dropped (true), and the request goes once more with a new one if time is left. */
  tokenRefused({ status }, attempt, credentials, used, request) {
    if (status !== 401 || attempt > 0 || !credentials.refreshes || request.deadlineAt - performance.now() < this.retry.minRemainingMs) return false;
    return credentials.renew(used);
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

module.exports = { Auth };
