'use strict';

// The answer cache's shared store: one Redis, for the gateway hosts of sides A and B. Best
// effort and bounded: a read waits READ_WITHIN_MS at most (later is not worth the router's
// deadline), a write is sent in the background, and whatever Redis does never fails a query nor
// grows the heap. Its states, as /health shows them:
//
//   connecting --ready--> connected --error or close--> unreachable --ready--> connected
//                            |                                         ^
//                            +-- TIMEOUTS_TO_DOWN commands in a row ---+-- unresponsive
//                                not answered within COMMAND_TIMEOUT_MS,
//                                over at least SILENT_MS
//
// and close() ends any of them: closed (a stop, or a reload with other cache settings).
//
// A Redis that keeps its TCP connection but answers nothing (a frozen host, a black-holed route)
// would otherwise hold every command sent to it: ioredis keeps a command waiting for its reply
// after its timeout, and the socket buffers what Redis does not read. So once it is unresponsive
// the connection is dropped (which drops what waits on it) and nothing more is sent until a new
// connection is ready: ioredis reconnects with a growing delay, and its ready check (an INFO that
// must be answered within the command timeout) is the probe. And at most MAX_IN_FLIGHT commands
// and MAX_IN_FLIGHT_BYTES of values are outstanding at any time, whatever the state says.
//
// A busy event loop is no evidence against Redis: a timeout timer that fired more than
// TIMER_LAG_MS late, or one that fired while a reply sat unread (timers run before I/O in a
// turn of the loop), would say so after any stall. So a timeout counts only when its timer was
// on time, and the timeouts in a row must span SILENT_MS: a stall makes a burst of them at one
// moment; a Redis that answers nothing goes on making them.

const { performance } = require('node:perf_hooks');
const { LogThrottle } = require('../log-throttle');
const { channels } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');

const READ_WITHIN_MS = 25;
const COMMAND_TIMEOUT_MS = 100;
const TIMEOUTS_TO_DOWN = 3;
const SILENT_MS = 200;
const TIMER_LAG_MS = 25;
const MAX_IN_FLIGHT = 1000;
const MAX_IN_FLIGHT_BYTES = 8 * 1024 * 1024;
const TIMED_OUT = 'Command timed out'; // ioredis's words for a commandTimeout (it gives no code)

/** An entry and what Redis says is left of its time, read at once (one round trip, no change in between). */
const GET_WITH_PTTL = "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}";

const STATES = Object.freeze({
  CONNECTING: 'connecting', CONNECTED: 'connected', UNREACHABLE: 'unreachable', UNRESPONSIVE: 'unresponsive', CLOSED: 'closed',
});

class RedisStore {
  /**
   * url: redis://host:port; log: where its state changes and failures are told; owner: what its
   * diagnostics messages carry as `gateway` (diagnostics.js).
   */
  constructor(url, { log = SILENT_LOG, owner = null } = {}) {
    this.log = log;
    this.owner = owner;
    this.throttle = new LogThrottle();
    this.state = STATES.CONNECTING;
    this.timeoutsInRow = 0;
    this.firstTimeoutAt = 0; // performance.now() of the first timeout in a row
    this.inFlight = 0;
    this.inFlightBytes = 0;
    const Redis = require('ioredis'); // only when a shared store is configured
    this.redis = new Redis(url, {
      enableOfflineQueue: false, // a command while not connected fails at once: the query goes on without it
      maxRetriesPerRequest: 0, // a dropped connection fails what waited on it; nothing is sent again
      autoResendUnfulfilledCommands: false,
      connectTimeout: 1000,
      commandTimeout: COMMAND_TIMEOUT_MS, // the ready check's INFO too: the probe of a Redis that stopped answering
      retryStrategy: (times) => Math.min(times * 200, 2000), // keep reconnecting in the background
    });
    this.redis.defineCommand('getWithPttl', { numberOfKeys: 1, lua: GET_WITH_PTTL });
    this.redis.on('ready', () => this.setState(STATES.CONNECTED));
    this.redis.on('error', (err) => this.connectionError(err));
    this.redis.on('close', () => {
      if (this.state === STATES.CONNECTED) this.setState(STATES.UNREACHABLE, 'connection closed');
    });
  }

  /** Whether a command may be sent now: connected, and below the in-flight bounds. */
  usable(bytes = 0) {
    return this.state === STATES.CONNECTED && this.inFlight < MAX_IN_FLIGHT && this.inFlightBytes + bytes <= MAX_IN_FLIGHT_BYTES;
  }

  /**
   * [value or null, remaining ms (PTTL: -1 no expiry, -2 gone)] of key, or undefined when the
   * store cannot be asked now or does not answer within READ_WITHIN_MS. Never rejects.
   */
  async read(key) {
    if (!this.usable()) return undefined;
    let timer;
    try {
      return await Promise.race([
        this.track(this.redis.getWithPttl(key), 0, 'read'),
        new Promise((resolve) => { timer = setTimeout(resolve, READ_WITHIN_MS, undefined); }),
      ]);
    } catch {
      return undefined; // counted and logged by track()
    } finally {
      clearTimeout(timer);
    }
  }

  /** SET key value PX ttlMs, in the background; skipped when the store cannot take it now. */
  write(key, value, ttlMs) {
    if (!this.usable(value.length)) return;
    this.track(this.redis.set(key, value, 'PX', ttlMs), value.length, 'write').catch(() => {});
  }

  remove(key) {
    if (!this.usable()) return;
    this.track(this.redis.del(key), 0, 'delete').catch(() => {});
  }

  /** p, counted while outstanding; its failure counted, logged (throttled), and a timeout in a row with others marks the store unresponsive. */
  track(p, bytes, what) {
    this.inFlight += 1;
    this.inFlightBytes += bytes;
    const sentAt = performance.now();
    return p.then((v) => {
      this.settled(bytes);
      this.timeoutsInRow = 0;
      return v;
    }, (err) => {
      this.settled(bytes);
      this.failed(err, what, sentAt);
      throw err;
    });
  }

  settled(bytes) {
    this.inFlight -= 1;
    this.inFlightBytes -= bytes;
  }

  failed(err, what, sentAt) {
    this.publishError(what, err);
    if (err.message === TIMED_OUT && this.state === STATES.CONNECTED) {
      const now = performance.now();
      if (now - sentAt - COMMAND_TIMEOUT_MS > TIMER_LAG_MS) return; // the loop was busy: says nothing of Redis
      if (this.timeoutsInRow === 0) this.firstTimeoutAt = now;
      this.timeoutsInRow += 1;
      if (this.timeoutsInRow >= TIMEOUTS_TO_DOWN && now - this.firstTimeoutAt >= SILENT_MS) this.unresponsive();
      return;
    }
    if (this.state !== STATES.CONNECTED) return; // what a drop of the connection failed: its state says it
    const n = this.throttle.hit(`redis-${what}`);
    if (n) this.log.warn(`cache store (Redis) ${what} failed: ${err.message}`, { count: n });
  }

  /** Commands in a row unanswered: nothing more is sent, and the connection (with what waits on it) is dropped; a new one is the probe. */
  unresponsive() {
    const ms = Math.round(performance.now() - this.firstTimeoutAt + COMMAND_TIMEOUT_MS);
    this.setState(STATES.UNRESPONSIVE, `${this.timeoutsInRow} commands in a row not answered within ${COMMAND_TIMEOUT_MS} ms, nothing heard for ${ms} ms`);
    // Destroyed, not ended: an end waits for Redis to read what is buffered, which a frozen Redis
    // never does. Its close fails what waited (maxRetriesPerRequest 0) and ioredis reconnects.
    const { stream } = this.redis;
    if (stream) stream.destroy();
    else this.redis.disconnect(true);
  }

  /** A failed command or connection (what: read, write, delete, connection), for the channel's subscribers. */
  publishError(what, error) {
    if (channels.cacheStoreError.hasSubscribers) channels.cacheStoreError.publish({ gateway: this.owner, what, error });
  }

  connectionError(err) {
    this.publishError('connection', err);
    // A reconnection whose ready check timed out: still unresponsive, not a new state to tell.
    if (this.state === STATES.UNRESPONSIVE && (err.message === TIMED_OUT || err.code === 'ETIMEDOUT')) return;
    this.setState(STATES.UNREACHABLE, err.code || err.message);
  }

  setState(state, why) {
    if (this.state === state || this.state === STATES.CLOSED) return;
    this.state = state;
    this.timeoutsInRow = 0;
    if (state === STATES.CONNECTED) this.log.info('cache store (Redis) connected');
    else this.log.warn(`cache store (Redis) ${state}${why ? `: ${why}` : ''}; queries go on with the local cache and the backend`);
  }

  /** Closed for good: the connection's end is no news for the operator. */
  close() {
    this.state = STATES.CLOSED;
    this.redis.disconnect();
  }
}

module.exports = { RedisStore, STATES, MAX_IN_FLIGHT };
