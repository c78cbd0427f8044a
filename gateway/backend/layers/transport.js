'use strict';

// The bottom of the backend chain: the engine (engines/). It counts the request for its origin,
// shows it to the request channels' subscribers (diagnostics.js), and turns a failure without an
// answer into a host_error outcome. Resolves with the engine's answer {status, text, retryAfter}
// (and `view`, the request's view, while the channels are watched) or that outcome; never rejects.

const { hostError, REASON, gaveUp } = require('../outcome');
const { watch } = require('../diagnostics');

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

class Transport {
  /** figures: OriginFigures; warnings: Warnings; deadlineMs: the query deadline, for blames(); owner: the channels' `gateway`. */
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
    const view = watch(this.owner, request);
    if (view === null) return this.engine.request(request).then(undefined, (err) => this.noAnswer(err, request, null));
    return this.engine.request(request, view).then(
      (res) => ({
        status: res.status, text: res.text, retryAfter: res.retryAfter, view,
      }),
      (err) => this.noAnswer(err, request, view),
    );
  }

  /** A request that got no answer: the engine's reason, as evidence against the origin or not (blames). */
  noAnswer(err, request, view) {
    const reason = err.reason || REASON.ERROR;
    const blame = blames(err, reason === REASON.TIMEOUT ? request.timeoutMs : this.deadlineMs);
    const detail = err.detail ? `${err.detail} (${request.origin})` : null;
    if (view !== null) view.error(err, reason);
    const outcome = hostError(reason, `backend ${reason.replace(/_/g, ' ')}`, blame, detail);
    if (reason !== REASON.ABORTED) this.figures.failed(request.origin, outcome);
    if (reason === REASON.TLS_ERROR) {
      this.warnings.warn(`tls ${request.origin}`, `backend TLS handshake with ${request.origin} failed: ${err.detail}; `
        + 'check backend.tls (ca for a private CA, servername for another name) and the backend\'s certificate');
    }
    return outcome;
  }
}

module.exports = { Transport };
