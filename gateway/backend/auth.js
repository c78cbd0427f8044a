'use strict';

// How backend requests authenticate (backend.auth, routes.<subtype>.auth; compiled and checked by
// config/backend.js). Basic and bearer credentials are one header made once. OAuth2 is the
// client-credentials grant (RFC 6749 section 4.4): the token is fetched at start, cached, and
// fetched again in the background when three quarters of its lifetime have passed (at most a day
// later: a timer past setTimeout's 2^31-1 ms fires at once), so queries find a valid token waiting
// and none but the very first waits for one. One fetch at a time, however many queries wait
// (single flight), and never two within a second, whatever expires_in says. A token is never
// presented in the last tenth of its lifetime (at most a second), the time a request may take to
// reach the API. A failed fetch is tried again after 1, 2, 4 ... 30 s, by a timer: until then
// queries fail at once without a token request, whatever their rate, so that an identity provider
// in trouble (or one that locks out a client it refuses) sees a handful of requests, not one per
// query. It is the token endpoint's failure (auth_failed), never the API's: it is not counted
// against the API's circuit.

const { performance } = require('node:perf_hooks');
const { REASON } = require('./outcome');
const { messageOf } = require('../../lib/errors');
const { AuthError } = require('./errors');
const { text: { printable } } = require('../../lib/protocol');
const { ACCEPT_ENCODING } = require('./engines');
const { channels, watch } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');
const { errorText, notB64token } = require('./token-text');

const TOKEN_TIMEOUT_MS = 5000;
const REFRESH_AT = 0.75; // of the lifetime
const MAX_REFRESH_MS = 24 * 3600 * 1000; // a day: well below setTimeout's 2^31-1 ms (24.8 days)
const MIN_GAP_MS = 1000; // between two token requests, whatever the lifetime
const MAX_MARGIN_MS = 1000;
const RETRY_MS = [1000, 2000, 4000, 8000, 15_000, 30_000];
const RENEW_EVERY_MS = 5000;

/** basic and bearer: one Authorization header, made once. */
class StaticCredentials {
  constructor(spec) {
    this.spec = spec;
    const secret = spec.reveal();
    this.value = spec.type === 'basic' ? `Basic ${Buffer.from(`${spec.username}:${secret}`).toString('base64')}` : `Bearer ${secret}`;
    this.refreshes = false;
  }

  /** The Authorization header now, or null when it must be waited for (never, here). */
  header() {
    return this.value;
  }

  async wait() {
    return this.value;
  }

  /** After a 401: nothing to renew (refreshes is false, so this is never asked). */
  renew() {
    return false;
  }

  /** A reload: nothing of the engine is used. */
  useEngine() {}

  status() {
    return { ...this.spec.toJSON(), state: 'static' };
  }

  close() {}
}

class OAuth2Credentials {
  /**
   * engine: the backend's HTTP engine (its TLS, proxy and connections apply to the token endpoint
   * too); owner: what its diagnostics messages carry as `gateway` (diagnostics.js); now(): wall
   * clock in ms, for tests.
   */
  constructor(spec, {
    engine, log = SILENT_LOG, owner = null, now = Date.now, timeoutMs = TOKEN_TIMEOUT_MS,
  }) {
    this.spec = spec;
    this.engine = engine;
    this.log = log;
    this.owner = owner;
    this.now = now;
    this.timeoutMs = timeoutMs;
    this.refreshes = true;
    const u = new URL(spec.tokenUrl);
    this.origin = u.origin;
    this.path = u.pathname + u.search;
    this.value = null; // "Bearer ..." while the token is usable
    this.usableUntil = 0;
    this.expiresAt = 0;
    this.fetchedAt = 0;
    this.notBefore = -Infinity; // no token request on a query's demand before this (back-off, MIN_GAP_MS)
    this.refused = null; // the AuthError queries get while a failure is being waited out
    this.inflight = null;
    this.timer = null;
    this.failures = 0;
    this.lastError = null;
    this.fetches = 0;
    this.renewedAt = -Infinity; // the last token dropped after a 401
    this.warnedShortLife = false;
    this.closed = false;
    this.fetch().catch(() => {}); // at start: a failure is logged and tried again, never a refused start
  }

  header() {
    if (this.value !== null && this.now() < this.usableUntil) return this.value;
    return null;
  }

  /**
   * The header, fetching a token first if none is usable; rejects with AuthError, or when signal
   * aborts. While a failed fetch is waited out (or within a second of the last fetch) it rejects
   * at once: the retry timer, not the queries, decides when the token endpoint is asked again.
   */
  async wait(signal) {
    const h = this.header();
    if (h !== null) return h;
    if (this.inflight === null && this.now() < this.notBefore) throw this.refusal();
    const fetching = this.inflight || this.fetch();
    if (!signal) return fetching;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort);
      fetching.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /**
   * The API answered 401 to `used`: that token is no good (revoked, or expired early). It is
   * dropped and a new one fetched; true when a retry with the new token makes sense. A token
   * fetched for a 401 that meets a 401 again says the API refuses this client, not the token:
   * no other is fetched for RENEW_EVERY_MS, so an API that refuses every token costs the token
   * endpoint one request per RENEW_EVERY_MS, not one per query. While the token endpoint itself
   * fails, the token is dropped and none fetched: its retry timer decides.
   */
  renew(used) {
    if (this.value !== used) return true; // already replaced, or being replaced: retry with that one
    const now = this.now();
    if (now - this.renewedAt < RENEW_EVERY_MS) return false;
    this.renewedAt = now;
    this.value = null;
    this.usableUntil = 0;
    if (this.inflight !== null) return true;
    if (this.refused !== null && now < this.notBefore) return false; // the token endpoint is being waited out: its retry timer asks it
    this.fetch().catch(() => {});
    return true;
  }

  /**
   * Why a query gets no token now, without a token request: the last failure, or a token that
   * expired (or was refused) within MIN_GAP_MS of its request.
   */
  refusal() {
    if (this.refused !== null) return this.refused;
    const inMs = Math.max(0, Math.ceil(this.notBefore - this.now()));
    return new AuthError(`no usable token (the last one expired or was refused); the token endpoint is asked again in ${inMs} ms`, REASON.AUTH_FAILED);
  }

  /** A reload: the backend that takes these credentials over sends their token requests through its engine from now on. */
  useEngine(engine) {
    this.engine = engine;
  }

  /** One token request at a time: its promise resolves with the new header. */
  fetch() {
    if (this.inflight !== null) return this.inflight;
    this.inflight = this.request().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  async request() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const { spec } = this;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING };
    if (spec.clientAuth === 'basic') {
      // RFC 6749 section 2.3.1: each part form-encoded before the Basic encoding.
      const enc = (s) => encodeURIComponent(s).replace(/%20/g, '+');
      headers.authorization = `Basic ${Buffer.from(`${enc(spec.clientId)}:${enc(spec.reveal())}`).toString('base64')}`;
    } else {
      form.set('client_id', spec.clientId);
      form.set('client_secret', spec.reveal());
    }
    if (spec.scope) form.set('scope', spec.scope);
    if (spec.audience) form.set('audience', spec.audience);
    const sentAt = this.now();
    this.notBefore = sentAt + MIN_GAP_MS;
    this.fetches++;
    const problem = await this.exchange(headers, form.toString(), sentAt);
    if (problem === null) {
      if (this.failures > 0) this.log.info(`backend token endpoint answers again (${this.origin})`, { failedRequests: this.failures });
      this.failures = 0;
      this.lastError = null;
      this.refused = null;
      return this.value;
    }
    this.failures++;
    this.lastError = problem;
    const retryMs = RETRY_MS[Math.min(this.failures - 1, RETRY_MS.length - 1)];
    this.notBefore = this.now() + retryMs;
    this.refused = new AuthError(`backend token request failed: ${problem}`, REASON.AUTH_FAILED);
    if (this.failures === 1 || this.failures % 10 === 0) {
      this.log.warn(`backend token request failed: ${problem}; queries for this backend get E_AG_HOST_ERROR1 (auth_failed) until a token is had`, {
        tokenUrl: spec.tokenUrl, clientId: spec.clientId, failures: this.failures,
      });
    }
    this.schedule(retryMs);
    throw this.refused;
  }

  /**
   * The token request itself (a request of kind 'token' to the channels' subscribers): null when a
   * token was taken, else what went wrong; its end told on the token channel.
   */
  async exchange(headers, body, sentAt) {
    const request = {
      origin: this.origin, path: this.path, method: 'POST', headers, body, signal: AbortSignal.timeout(this.timeoutMs), kind: 'token', template: this.path,
    };
    const started = performance.now();
    let problem;
    let error = null;
    const view = watch(this.owner, request);
    try {
      const res = await this.engine.request(request, view);
      problem = this.accept(res, sentAt);
      if (view !== null) view.end(res.status, problem === null ? 'ok' : REASON.AUTH_FAILED);
    } catch (err) {
      problem = `no answer: ${err.detail || err.reason || messageOf(err)}`;
      error = err;
      if (view !== null) view.error(err, err.reason || REASON.ERROR);
    }
    if (channels.token.hasSubscribers) {
      channels.token.publish({
        gateway: this.owner,
        origin: this.origin,
        ok: problem === null,
        ms: performance.now() - started,
        expiresInMs: problem === null && Number.isFinite(this.expiresAt) ? this.expiresAt - sentAt : null,
        error: problem === null ? null : error || new AuthError(problem, REASON.AUTH_FAILED),
      });
    }
    return problem;
  }

  /** A token endpoint's answer -> null when a token was taken, else what was wrong with it. */
  accept({ status, text }, sentAt) {
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // described below
    }
    if (status !== 200) return `the token endpoint answered HTTP ${status}${errorText(json, text)}`;
    if (json === null || typeof json.access_token !== 'string' || json.access_token === '') {
      return 'the token endpoint\'s answer has no access_token';
    }
    const unfit = notB64token(json.access_token);
    if (unfit !== null) return `the token endpoint's access_token is not a bearer token (RFC 6750 b64token): ${unfit}`;
    if (json.token_type !== undefined && String(json.token_type).toLowerCase() !== 'bearer') {
      return `token_type ${printable(json.token_type, 40)} is not Bearer`;
    }
    const lifetimeMs = Number(json.expires_in) > 0 ? Number(json.expires_in) * 1000 : null;
    this.value = `Bearer ${json.access_token}`;
    this.fetchedAt = sentAt;
    if (lifetimeMs === null) {
      // No expires_in (RFC 6749 5.1: recommended, not required): used until the API answers 401.
      this.expiresAt = Infinity;
      this.usableUntil = Infinity;
      return null;
    }
    this.expiresAt = sentAt + lifetimeMs;
    this.usableUntil = this.expiresAt - Math.min(MAX_MARGIN_MS, lifetimeMs / 10);
    if (lifetimeMs < MIN_GAP_MS) this.warnShortLife(json.expires_in);
    const refreshAt = sentAt + Math.max(MIN_GAP_MS, Math.min(MAX_REFRESH_MS, lifetimeMs * REFRESH_AT));
    this.schedule(refreshAt - this.now());
    return null;
  }

  /** Once: tokens that live less than MIN_GAP_MS leave queries without one for most of each second. */
  warnShortLife(expiresIn) {
    if (this.warnedShortLife) return;
    this.warnedShortLife = true;
    this.log.warn(`the token endpoint's tokens live ${printable(expiresIn, 20)} s (expires_in): a token is fetched at most once a second, `
      + 'so queries between its expiry and the next get E_AG_HOST_ERROR1 (auth_failed)', { tokenUrl: this.spec.tokenUrl });
  }

  schedule(ms) {
    if (this.closed) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.fetch().catch(() => {});
    }, Math.max(0, ms));
    this.timer.unref();
  }

  /** Why queries cannot be sent now, or null when a token is usable (for /ready). */
  problem() {
    return this.header() === null && this.lastError !== null ? this.lastError : null;
  }

  status() {
    const iso = (t) => (t === 0 ? null : Number.isFinite(t) ? new Date(t).toISOString() : 'never');
    return {
      ...this.spec.toJSON(),
      state: this.header() !== null ? 'valid' : this.lastError !== null ? 'failing' : 'fetching',
      fetchedAt: iso(this.fetchedAt),
      expiresAt: iso(this.expiresAt),
      tokenRequests: this.fetches,
      lastError: this.lastError,
    };
  }

  close() {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** The credentials for a compiled AuthSpec. */
function createCredentials(spec, deps) {
  return spec.type === 'oauth2' ? new OAuth2Credentials(spec, deps) : new StaticCredentials(spec);
}

/**
 * One backend's credentials: one per distinct auth spec (its key), shared by the routes that name
 * the same. A reload's backend takes over what its predecessor had (handOver), so that an OAuth2
 * token is not fetched again and the old backend no longer closes it. deps: {engine, log, owner}.
 */
class CredentialsBook {
  constructor(deps) {
    this.deps = deps;
    this.byKey = new Map();
  }

  /** The credentials of spec (null for none): this book's, else handed over by previous (a CredentialsBook, or null), else new. */
  for(spec, previous = null) {
    if (spec === null || spec === undefined) return null;
    let c = this.byKey.get(spec.key);
    if (c === undefined) {
      c = (previous === null ? undefined : previous.handOver(spec.key, this.deps.engine)) || createCredentials(spec, this.deps);
      this.byKey.set(spec.key, c);
    }
    return c;
  }

  /** The credentials of key, given up to a new backend whose engine sends their token requests from now on; undefined when there are none. */
  handOver(key, engine) {
    const c = this.byKey.get(key);
    if (c === undefined) return undefined;
    this.byKey.delete(key);
    c.useEngine(engine);
    return c;
  }

  /** Why queries cannot be sent now (for /ready), or null. */
  notReady() {
    for (const c of this.byKey.values()) {
      const p = c.refreshes ? c.problem() : null;
      if (p !== null) return `backend auth: ${p}`;
    }
    return null;
  }

  toJSON() {
    return [...this.byKey.values()].map((c) => c.status());
  }

  close() {
    for (const c of this.byKey.values()) c.close();
  }
}

module.exports = { CredentialsBook };
