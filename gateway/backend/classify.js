'use strict';

// What an HTTP answer means, from the answer and the route alone (statuses.js has the rules,
// formats.js the bodies): no log, no figures, no state, so that a test can call it with any answer
// and the layer that sends the request (layers.js) does the rest.

const {
  ok, appError, hostError, KIND, REASON,
} = require('./outcome');
const { NotInFormat, OverBudget, readBody } = require('./formats');
const { mapResponse } = require('./request');
const {
  kindOf, statusReason, errorText, formatOf, UNAUTHORIZED,
} = require('./statuses');
const { parseRetryAfter } = require('./pace');

/**
 * An answer {status, text, retryAfter} -> an outcome (outcome.js) for route (a compiled route, or
 * the default contract's {statuses, errorPath, mapping: null}): a 2xx read in the route's format
 * and mapped, the API's own "no" as app_error, anything else a host_error blaming the origin.
 */
function classify(response, route) {
  const { status, text } = response;
  const kind = kindOf(status, text, route);
  if (kind === KIND.OK) {
    const format = formatOf(route);
    let doc = readBody(format, text);
    if (doc instanceof NotInFormat) {
      if (doc instanceof OverBudget) return overBudget(format, doc);
      if (text.trim() !== '' || route.statuses === null || route.statuses.get(status) !== KIND.OK) {
        return hostError(format.reason, `backend answered with ${doc.problem}`, true);
      }
      doc = {}; // a status mapped to ok with no body answers empty
    }
    return ok(route.mapping ? mapResponse(route.mapping, doc, format.path) : doc);
  }
  if (kind === KIND.APP_ERROR) return appError(errorText(text, route, status), undefined, status); // a deliberate "no" is an answer
  return failure(kind, response);
}

/**
 * For a handler module's ctx.request, whose handler reads the answer itself: 'ok' or 'app_error'
 * (the API's own "no") when the answer is one, else the host_error it is for route (its
 * credentials refused, a 5xx, a 429, a proxy's page).
 */
function verdictFor(response, route) {
  const kind = kindOf(response.status, response.text, route);
  return kind === KIND.OK || kind === KIND.APP_ERROR ? kind : failure(kind, response);
}

/** A body refused unread for a budget: a host error whose `budget` names the setting, for the log line (layers.js). */
function overBudget(format, refused) {
  const outcome = hostError(format.reason, `backend answered with ${refused.problem}`, true, `${refused.problem} (${refused.setting})`);
  outcome.budget = refused.setting;
  return outcome;
}

function failure(kind, { status, retryAfter }) {
  if (kind === UNAUTHORIZED) {
    // 401 or 403: the gateway's own credentials were refused, which is no answer about the caller.
    return hostError(REASON.UNAUTHORIZED, `backend refused the gateway's credentials (HTTP ${status})`, true, `HTTP ${status}`);
  }
  const outcome = hostError(statusReason(status), `backend HTTP ${status}`, true);
  if ((status === 429 || status === 503) && retryAfter !== undefined) {
    const ms = parseRetryAfter(retryAfter);
    if (ms !== undefined) outcome.retryAfterMs = ms; // for the lane's pace (pace.js)
  }
  return outcome;
}

module.exports = { classify, verdictFor };
