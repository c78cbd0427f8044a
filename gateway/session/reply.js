'use strict';

// Outcome -> reply, for one session: which bytes the router gets for what the backend side
// decided (backend/outcome.js), the `outcome` label it is counted under, and the log events on
// the way (an answer adjusted to fit, one too large for a frame, an internal error). Whatever an
// answer holds (a throwing getter, a Proxy), it costs that query a FAILURE_CONF, never the process.

const { STATUS, EncodeError } = require('../../lib/protocol');
const { messageOf } = require('../../lib/errors');
const { ReplyWriter } = require('../answer/writer');
const {
  KIND, LABEL, FAILURE_STATUS, labelOf,
} = require('../backend/outcome');
const { ASCII } = require('../answer/fit');

const ASCII_TEXT = () => ASCII;

class Replies {
  /**
   * id: the session's, for the log lines; log and throttle: where they go, and how often; debug:
   * whether debug lines are wanted; serialize: the session's serializer; maxBody: limits.maxMessageLength;
   * text(): the config's answers section ({charset, transliterate}) as it is now.
   */
  constructor({
    id, log, throttle, debug, serialize, maxBody, text = ASCII_TEXT,
  }) {
    this.ctx = {
      id, log, throttle, debug,
    };
    this.writer = new ReplyWriter({ maxBody, serialize });
    this.text = text;
  }

  setCipher(cipher) {
    this.writer.setCipher(cipher);
  }

  failureConf(invokeId, status, text) {
    return this.writer.failureConf(invokeId, status, text);
  }

  /** [label, FAILURE_CONF bytes] for a query that failed as `label`, with the status that label is answered with (outcome.js). */
  failed(q, label, text) {
    return [label, this.writer.failureConf(q.invokeId, STATUS[FAILURE_STATUS[label]], text)];
  }

  /** [label, reply bytes] for an outcome; never throws. labels: the query's, for the log lines (diagnostics.js labelsOf). */
  forOutcome(q, outcome, labels) {
    try {
      return this.build(q, outcome, labels);
    } catch (err) {
      const s = this.ctx;
      const n = s.throttle.hit('answer-error');
      if (n) s.log.error(
        'could not turn the backend answer into a reply',
        { ...labels, session: s.id, invokeId: q.invokeId, subtype: q.subtype, error: messageOf(err), count: n }
      );
      return this.failed(q, LABEL.HOST_ERROR, 'answer could not be encoded');
    }
  }

  build(q, outcome, labels) {
    const s = this.ctx;
    switch (outcome.kind) {
      case KIND.OK: return this.answer(q, outcome.answer, labelOf(outcome), labels);
      case KIND.APP_ERROR: return this.failed(q, LABEL.APP_ERROR, outcome.text);
      default: {
        if (outcome.err) {
          const n = s.throttle.hit('internal');
          if (n) s.log.error('internal error while answering a query', { ...labels, session: s.id, error: messageOf(outcome.err), count: n });
        }
        if (s.debug) s.log.debug('backend failed', { ...labels, session: s.id, invokeId: q.invokeId, reason: outcome.reason, cause: outcome.detail });
        return this.failed(q, labelOf(outcome), outcome.text);
      }
    }
  }

  /** QUERY_RESP for a backend answer, fitted to the tag and frame limits. */
  answer(q, answer, label, labels) {
    const s = this.ctx;
    let built;
    try {
      built = this.writer.queryResp(q, answer, this.text());
    } catch (err) {
      if (!(err instanceof EncodeError)) throw err;
      const n = s.throttle.hit('encode');
      if (n) s.log.error('backend answer could not be encoded', { ...labels, session: s.id, invokeId: q.invokeId, error: err.message, count: n });
      return this.failed(q, LABEL.HOST_ERROR, 'answer could not be encoded');
    }
    const { buf, notes } = built;
    if (notes.length > 0) {
      const n = s.throttle.hit('adjusted');
      if (n) {
        s.log.warn('backend answer adjusted to fit GED-145', {
          ...labels, session: s.id, invokeId: q.invokeId, subtype: q.subtype, changes: notes, count: n,
        });
      }
    }
    if (buf === null) {
      const n = s.throttle.hit('too-large');
      if (n) s.log.error(
        `backend answer does not fit one frame (limits.maxMessageLength ${this.writer.maxBody}) even without ECC entries`,
        { ...labels, session: s.id, invokeId: q.invokeId, subtype: q.subtype, count: n }
      );
      return this.failed(q, LABEL.HOST_ERROR, 'answer too large for one message');
    }
    return [label, buf];
  }
}

module.exports = { Replies };
