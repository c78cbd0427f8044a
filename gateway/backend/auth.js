'use strict';

// How backend requests authenticate (backend.auth, routes.<subtype>.auth; compiled and checked by
// config/backend.js). Basic and bearer credentials are one header made once. OAuth2 is the
// client-credentials grant (RFC 6749 section 4.4): the token is fetched at start, cached, and
// fetched again in the background when three quarters of its lifetime have passed, so queries
// find a valid token waiting and none but the very first waits for one. One fetch at a time,
// however many queries wait (single flight). A token is never presented in the last tenth of its
// lifetime (at most a second), the time a request may take to reach the API. A failed fetch is
// tried again after 1, 2, 4 ... 30 s, and is the token endpoint's failure (auth_failed), never
// the API's: it is not counted against the API's circuit.

const { REASON } = require('./outcome');
const { messageOf, AuthError } = require('../../lib/errors');
const { ACCEPT_ENCODING } = require('./engines');

const TOKEN_TIMEOUT_MS = 5000;
const REFRESH_AT = 0.75; // of the lifetime
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

  status() {
    return { ...this.spec.toJSON(), state: 'static' };
  }

  close() {}
}

class OAuth2Credentials {
  /**
   * engine: the backend's HTTP engine (its TLS, proxy and connections apply to the token endpoint
   * too); log, metrics may be null; now(): wall clock in ms, for tests.
   */
  constructor(spec, {
    engine, log = null, metrics = null, now = Date.now, timeoutMs = TOKEN_TIMEOUT_MS,
  }) {
    this.spec = spec;
    this.engine = engine;
    this.log = log;
    this.metrics = metrics;
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
    this.inflight = null;
    this.timer = null;
    this.failures = 0;
    this.lastError = null;
    this.fetches = 0;
    this.renewedAt = -Infinity; // the last token dropped after a 401
    this.closed = false;
    this.fetch().catch(() => {}); // at start: a failure is logged and tried again, never a refused start
  }

  header() {
    if (this.value !== null && this.now() < this.usableUntil) return this.value;
    return null;
  }

  /** The header, fetching a token first if none is usable; rejects with AuthError, or when signal aborts. */
  async wait(signal) {
    const h = this.header();
    if (h !== null) return h;
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
   * endpoint one request per RENEW_EVERY_MS, not one per query.
   */
  renew(used) {
    if (this.value !== used) return true; // already replaced, or being replaced: retry with that one
    const now = this.now();
    if (now - this.renewedAt < RENEW_EVERY_MS) return false;
    this.renewedAt = now;
    this.value = null;
    this.usableUntil = 0;
    if (this.inflight === null) this.fetch().catch(() => {});
    return true;
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
    this.fetches++;
    let problem;
    try {
      const res = await this.engine.request({
        origin: this.origin, path: this.path, method: 'POST', headers, body: form.toString(), signal: AbortSignal.timeout(this.timeoutMs),
      });
      problem = this.accept(res, sentAt);
    } catch (err) {
      problem = `no answer: ${err.detail || err.reason || messageOf(err)}`;
    }
    if (problem === null) {
      if (this.metrics) this.metrics.tokenRequests.labels('ok').inc();
      if (this.failures > 0 && this.log) this.log.info(`backend token endpoint answers again (${this.origin})`, { failedRequests: this.failures });
      this.failures = 0;
      this.lastError = null;
      return this.value;
    }
    if (this.metrics) this.metrics.tokenRequests.labels('error').inc();
    this.failures++;
    this.lastError = problem;
    if (this.log && (this.failures === 1 || this.failures % 10 === 0)) {
      this.log.warn(`backend token request failed: ${problem}; queries for this backend get E_AG_HOST_ERROR1 (auth_failed) until a token is had`, {
        tokenUrl: spec.tokenUrl, clientId: spec.clientId, failures: this.failures,
      });
    }
    this.schedule(RETRY_MS[Math.min(this.failures - 1, RETRY_MS.length - 1)]);
    throw new AuthError(`backend token request failed: ${problem}`, REASON.AUTH_FAILED);
  }

  /** A token endpoint's answer -> null when a token was taken, else what was wrong with it. */
  accept({ status, text }, sentAt) {
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // described below
    }
    if (status !== 200) {
      if (json === null || typeof json.error !== 'string') return `the token endpoint answered HTTP ${status}`;
      const more = typeof json.error_description === 'string' ? ` (${json.error_description.slice(0, 200)})` : '';
      return `the token endpoint answered HTTP ${status}: ${json.error.slice(0, 100)}${more}`;
    }
    if (json === null || typeof json.access_token !== 'string' || json.access_token === '' || /[\r\n]/.test(json.access_token)) {
      return 'the token endpoint\'s answer has no access_token';
    }
    if (json.token_type !== undefined && String(json.token_type).toLowerCase() !== 'bearer') return `token_type ${json.token_type} is not Bearer`;
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
    this.schedule(lifetimeMs * REFRESH_AT - (this.now() - sentAt));
    return null;
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

module.exports = { createCredentials };
