'use strict';

// Backend host names, resolved with a time limit and remembered. Node's dns.lookup (getaddrinfo,
// what a connect uses) has no time limit of its own: a name whose DNS server does not answer held
// every connection to it for the resolver's whole timeout (5 s and more), far past the query
// deadline, and each waiting lookup held one of libuv's four threads. Here a name is looked up at
// most once at a time; a lookup that has not answered within LOOKUP_TIMEOUT_MS fails that
// connection with EAI_AGAIN (a request that never reached its backend: the next origin is tried),
// and when it answers later its addresses are kept for the next connection. Known addresses answer
// at once: past CACHE_MS they are looked up again in the background, and a name whose refresh
// fails or hangs goes on with the addresses it had for up to STALE_MS more.

const dns = require('node:dns');
const net = require('node:net');

const LOOKUP_TIMEOUT_MS = 100;
const CACHE_MS = 30_000;
const STALE_MS = 300_000;

class HostNames {
  constructor({ timeoutMs = LOOKUP_TIMEOUT_MS, cacheMs = CACHE_MS, staleMs = STALE_MS, resolve = dns.lookup } = {}) {
    this.timeoutMs = timeoutMs;
    this.cacheMs = cacheMs;
    this.staleMs = staleMs;
    this.resolve = resolve;
    this.names = new Map(); // hostname -> {addresses, at, pending}
    this.lookup = this.lookup.bind(this); // net.connect's `lookup` option
  }

  /** net.connect's lookup(hostname, options, callback): callback(err, address, family), or (err, [{address, family}]) with options.all. */
  lookup(hostname, options, callback) {
    if (typeof options === 'function') {
      callback = options;
      options = {};
    }
    const all = options !== null && typeof options === 'object' && options.all === true;
    const answer = (err, addresses) => {
      if (err) callback(err);
      else if (all) callback(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    };
    if (net.isIP(hostname) !== 0) {
      answer(null, [{ address: hostname, family: net.isIP(hostname) }]);
      return;
    }
    const entry = this.names.get(hostname);
    const now = Date.now();
    if (entry !== undefined && entry.addresses !== null && now - entry.at < this.cacheMs + this.staleMs) {
      // Known addresses answer at once; past cacheMs they are looked up again in the background.
      if (now - entry.at >= this.cacheMs) this.refresh(hostname).catch(() => {});
      answer(null, entry.addresses);
      return;
    }
    const pending = this.refresh(hostname);
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      answer(Object.assign(new Error(`DNS lookup of ${hostname} did not answer within ${this.timeoutMs} ms`), { code: 'EAI_AGAIN', hostname }));
    }, this.timeoutMs);
    pending.then((addresses) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      answer(null, addresses);
    }, (err) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      answer(err);
    });
  }

  /** One lookup of hostname at a time; its addresses are kept when it answers, however late. */
  refresh(hostname) {
    let entry = this.names.get(hostname);
    if (entry === undefined) {
      entry = { addresses: null, at: 0, pending: null };
      this.names.set(hostname, entry);
    }
    if (entry.pending === null) {
      entry.pending = new Promise((resolve, reject) => {
        this.resolve(hostname, { all: true }, (err, addresses) => {
          entry.pending = null;
          if (err) {
            reject(err);
            return;
          }
          entry.addresses = addresses;
          entry.at = Date.now();
          resolve(addresses);
        });
      });
      entry.pending.catch(() => {}); // a lookup nobody waits for any more may fail unheard
    }
    return entry.pending;
  }
}

module.exports = { HostNames };
