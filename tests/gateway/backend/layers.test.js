'use strict';

// The backend's layers (gateway/backend/layers/), each built alone with a `next` of the test's,
// the pure classify (classify.js), the per-origin figures and the credentials book: what each
// layer does with a request and an answer, without a socket.

const assert = require('node:assert/strict');
const { Auth } = require('../../../gateway/backend/layers/auth');
const { Answer } = require('../../../gateway/backend/layers/answer');
const { Breaker } = require('../../../gateway/backend/layers/breaker');
const { Failover } = require('../../../gateway/backend/layers/failover');
const { Warnings } = require('../../../gateway/backend/warnings');
const { classify, verdictFor } = require('../../../gateway/backend/classify');
const { OriginFigures } = require('../../../gateway/backend/origin-figures');
const { CredentialsBook } = require('../../../gateway/backend/auth');
const { Breakers } = require('../../../gateway/backend/breakers');
const { statusMap } = require('../../../gateway/backend/statuses');
const { hostError, REASON } = require('../../../gateway/backend/outcome');
const { SILENT_LOG } = require('../../../gateway/backend/silent-log');

const CONTRACT = { statuses: null, errorPath: 'error', mapping: null };
const answer = (status, body = '', retryAfter) => ({ status, text: typeof body === 'string' ? body : JSON.stringify(body), retryAfter });

/** A `next` that answers from a script, keeping the requests it was given (their headers as sent then). */
function scripted(...replies) {
  const seen = [];
  return {
    seen,
    dispatch(request) {
      seen.push({
        origin: request.origin, path: request.path, headers: { ...request.headers }, attempt: request.attempt, retry: request.retry,
      });
      const reply = replies.length > 1 ? replies.shift() : replies[0];
      return Promise.resolve(typeof reply === 'function' ? reply(request) : reply);
    },
  };
}

const request = (fields = {}) => ({
  origin: 'http://a.test', path: '/x', headers: {}, signal: new AbortController().signal, query: { subtype: 's', invokeId: 1 },
  spec: CONTRACT, forHandler: false, credentials: null, deadlineAt: Infinity, attempt: 1, retry: null, ...fields,
});

describe('backend layers, each alone', () => {
  describe('classify(response, route): pure', () => {
    it('a 2xx JSON object is ok with its document; mapped when the route maps', () => {
      assert.deepEqual(classify(answer(200, { a: 1 }), CONTRACT), { kind: 'ok', answer: { a: 1 } });
      const route = { statuses: null, errorPath: 'error', mapping: new Map([['vars.1', 'a']]) };
      assert.deepEqual(classify(answer(200, { a: 'x' }), route).answer, { vars: { 1: 'x' }, ecc: {} });
    });

    it('the API\'s own 404 is an app_error; 401 unauthorized; 503 with Retry-After carries its pause; a 2xx not JSON is bad_json', () => {
      assert.equal(classify(answer(404, { error: 'no such caller' }), CONTRACT).kind, 'app_error');
      const refused = classify(answer(401), CONTRACT);
      assert.deepEqual([refused.kind, refused.reason, refused.detail], ['host_error', 'unauthorized', 'HTTP 401']);
      const busy = classify(answer(503, '', '2'), CONTRACT);
      assert.deepEqual([busy.reason, busy.retryAfterMs, busy.blame], ['http_503', 2000, true]);
      assert.equal(classify(answer(200, '<html>'), CONTRACT).reason, 'bad_json');
    });

    it('the same answer gives the same outcome, and the answer is not changed', () => {
      const res = Object.freeze(answer(429, { error: 'slow down' }, '1'));
      assert.deepEqual(classify(res, CONTRACT), classify(res, CONTRACT));
    });

    it('for a handler: ok or app_error as words, a failure as its host_error', () => {
      const route = { kind: 'module', statuses: statusMap({ 500: 'app_error' }), errorPath: 'error' };
      assert.equal(verdictFor(answer(200, 'anything'), route), 'ok');
      assert.equal(verdictFor(answer(500), route), 'app_error');
      assert.equal(verdictFor(answer(502), route).reason, 'http_502');
    });
  });

  describe('Auth: the credentials and the 401 retry', () => {
    /** OAuth2-like credentials: each renew() gives a new token. */
    function tokens() {
      let n = 1;
      return {
        refreshes: true,
        renewed: 0,
        header: () => `Bearer t${n}`,
        wait: async () => `Bearer t${n}`,
        renew(used) {
          if (used !== `Bearer t${n}`) return true;
          this.renewed++;
          n++;
          return true;
        },
      };
    }

    it('a 401 to the first token: that token is dropped and the request goes once more with a new one, attempt 2, retry auth', async () => {
      const next = scripted(answer(401), answer(200, { ok: true }));
      const credentials = tokens();
      const r = request({ credentials });
      const res = await new Auth(next, { retry: { minRemainingMs: 0 }, figures: new OriginFigures(null) }).dispatch(r);
      assert.equal(res.status, 200);
      assert.deepEqual(next.seen.map((s) => [s.headers.authorization, s.attempt, s.retry]), [['Bearer t1', 1, null], ['Bearer t2', 2, 'auth']]);
      assert.equal(credentials.renewed, 1);
      assert.deepEqual([r.headers, r.attempt, r.retry], [{}, 1, null], 'the request it was given is not changed: it sends new ones');
    });

    it('a second 401 is the answer (no third request), and none is retried without the deadline\'s time left', async () => {
      const next = scripted(answer(401));
      const res = await new Auth(next, { retry: { minRemainingMs: 0 }, figures: new OriginFigures(null) }).dispatch(request({ credentials: tokens() }));
      assert.deepEqual([res.status, next.seen.length], [401, 2]);
      const late = scripted(answer(401));
      await new Auth(late, { retry: { minRemainingMs: 50 }, figures: new OriginFigures(null) }).dispatch(request({ credentials: tokens(), deadlineAt: 0 }));
      assert.equal(late.seen.length, 1);
    });

    it('no token to be had: auth_failed, counted against the origin, nothing sent', async () => {
      const next = scripted(answer(200));
      const figures = new OriginFigures(null);
      const credentials = { refreshes: true, header: () => null, wait: async () => { throw new Error('token endpoint down'); } };
      const res = await new Auth(next, { retry: { minRemainingMs: 0 }, figures }).dispatch(request({ credentials }));
      assert.deepEqual([res.reason, next.seen.length, figures.of('http://a.test').byReason], ['auth_failed', 0, { auth_failed: 1 }]);
    });
  });

  describe('Answer: classification and what a failure tells', () => {
    it('an answer becomes its outcome; a failure is counted for its origin and a 429 warned about once per 10 s', async () => {
      const lines = [];
      const figures = new OriginFigures(null);
      const warnings = new Warnings({ warn: (m) => lines.push(m) });
      const layer = new Answer(scripted(answer(429, '', '1')), { figures, warnings, routerGets: 'E_AG_HOST_ERROR1' });
      const outcomes = [await layer.dispatch(request()), await layer.dispatch(request())];
      assert.deepEqual(outcomes.map((o) => [o.reason, o.retryAfterMs]), [['rate_limited', 1000], ['rate_limited', 1000]]);
      assert.deepEqual(figures.of('http://a.test').byReason, { rate_limited: 2 });
      assert.equal(lines.length, 1);
    });

    it('a no-answer outcome from below passes as it is', async () => {
      const outcome = hostError(REASON.RESET, 'backend reset', true);
      assert.equal(await new Answer(scripted(outcome), { figures: new OriginFigures(null), warnings: new Warnings(SILENT_LOG) }).dispatch(request()), outcome);
    });
  });

  describe('Failover and Breaker: the contract over its base URLs', () => {
    const targets = [{ origin: 'http://a.test', basePath: '/api' }, { origin: 'http://b.test', basePath: '' }];
    const breakers = () => new Breakers({ enabled: false }, { log: SILENT_LOG });
    const unreachable = hostError(REASON.UNREACHABLE, 'backend unreachable', true);

    it('failover: a request that never reached the first origin goes to the next, attempt 2 with retry failover, paths below each base URL', async () => {
      const b = breakers();
      const next = scripted(unreachable, answer(200, {}));
      const chain = new Failover(new Breaker(next, b), {
        targets, strategy: 'failover', retry: { enabled: true, minRemainingMs: 0 }, breakers: b, log: SILENT_LOG,
      });
      const r = request({ origin: null, path: '/query/s', template: '/query/{subtype}' });
      const outcome = await chain.dispatch(r);
      assert.equal(outcome.status, 200);
      assert.deepEqual(next.seen.map((s) => `${s.origin}${s.path} ${s.attempt} ${s.retry}`), ['http://a.test/api/query/s 1 null', 'http://b.test/query/s 2 failover']);
      assert.deepEqual([r.origin, r.path], [null, '/query/s'], 'the request it was given is not changed');
    });

    it('balance: each query starts at the next base URL in turn', async () => {
      const b = breakers();
      const next = scripted(answer(200, {}));
      const layer = new Failover(new Breaker(next, b), {
        targets, strategy: 'balance', retry: { enabled: true, minRemainingMs: 0 }, breakers: b, log: SILENT_LOG,
      });
      for (let i = 0; i < 4; i++) await layer.dispatch(request({ origin: null, path: '/query', template: '/query' }));
      assert.deepEqual(next.seen.map((s) => s.origin), ['http://a.test', 'http://b.test', 'http://a.test', 'http://b.test']);
    });
  });

  describe('OriginFigures and CredentialsBook', () => {
    it('figures per origin: requests, failures by reason, the last error', () => {
      const figures = new OriginFigures(null);
      figures.sent('http://a.test');
      figures.failed('http://a.test', hostError(REASON.TLS_ERROR, 'backend tls error', true, 'CERT_HAS_EXPIRED (http://a.test)'));
      const { 'http://a.test': a } = figures.toJSON({});
      // No health beside it (no query's outcome judged the origin): idle, not reachable.
      assert.deepEqual([a.requests, a.failures, a.byReason, a.lastError, a.state, a.lastState], [1, 1, { tls_error: 1 }, 'tls_error: CERT_HAS_EXPIRED (http://a.test)',
        'idle', 'reachable']);
    });

    it('a reload\'s book takes its predecessor\'s credentials over: the same object, its token requests through the new engine', async () => {
      const engine = (name, calls) => ({
        request: async (r) => {
          calls.push(`${name} ${r.kind}`);
          return { status: 200, text: JSON.stringify({ access_token: `t-${calls.length}`, expires_in: 60 }) };
        },
      });
      const calls = [];
      const spec = {
        type: 'oauth2', key: '["oauth2"]', tokenUrl: 'http://idp.test/token', clientId: 'id', clientAuth: 'body',
      };
      spec.reveal = () => 'secret';
      spec.toJSON = () => ({ type: 'oauth2' });
      const old = new CredentialsBook({ engine: engine('old', calls), log: SILENT_LOG, owner: null });
      const c = old.for(spec);
      assert.equal(await c.wait(), 'Bearer t-1');
      const book = new CredentialsBook({ engine: engine('new', calls), log: SILENT_LOG, owner: null });
      assert.equal(book.for(spec, old), c);
      assert.deepEqual([old.toJSON().length, book.toJSON().length], [0, 1]);
      assert.equal(c.header(), 'Bearer t-1', 'the token is taken over, not fetched again');
      c.renew('Bearer t-1'); // the API refused it: the next token request goes through the new engine
      assert.equal(await c.wait(), 'Bearer t-2');
      assert.deepEqual(calls, ['old token', 'new token']);
      book.close();
    });
  });
});
