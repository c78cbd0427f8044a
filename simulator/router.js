'use strict';

// The router simulator: one or two sides (A, B) with the ICM fault-tolerance modes, and the
// workloads a test lab needs: open loop at a fixed rate (latency from each query's scheduled
// time, so no coordinated omission) or closed loop with a fixed window of outstanding queries.
// Beside the run's figures it keeps the router's half-hour figures per side (router-half-hours.js).

const { EventEmitter } = require('node:events');
const { performance } = require('node:perf_hooks');
const { RouterConnection } = require('./connection');
const { routerSettings, MODES } = require('./settings');
const { RunStats } = require('./stats');
const { QueryMix } = require('./workload');
const { REJECT_KINDS, FATAL_KINDS } = require('./injector');
const { prng } = require('../lib/prng');
const { PcapWriter } = require('./pcap');
const { RouterHalfHours } = require('./router-half-hours');
const { OperatorError } = require('../lib/errors');
const tls = require('node:tls');

/** True when host:port completes a TLS handshake (certificate unchecked: this only asks what it speaks). */
function speaksTls(host, port) {
  return new Promise((resolve) => {
    const socket = tls.connect({ host, port, rejectUnauthorized: false });
    const done = (yes) => {
      socket.destroy();
      resolve(yes);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('secureConnect', () => done(true));
    socket.once('error', (err) => done(/CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE/.test(err.code || '')));
  });
}

class Router extends EventEmitter {
  /**
   * options: {targets: [{host, port}] (one per side; a single target serves both sides),
   *   sides: ['A'] | ['A', 'B'], mode, preferredSide, settings (router settings),
   *   injection: {frag, byteByByte, fragDelayMs, coalesce}, invalidRate, invalidKinds,
   *   templates, seed, tls (tls.connect options), desKey (Buffer: encrypt), pcap (file to capture to),
   *   profile (the wire numbering, lib/protocol's createProfile; ours by default),
   *   now (the wall clock of the half-hour figures; Date.now)}
   */
  constructor(options = {}) {
    super();
    const sides = options.sides || ['A'];
    const mode = options.mode || (sides.length > 1 ? 'duplicate' : 'none');
    if (!MODES.includes(mode)) throw new RangeError(`mode must be one of ${MODES.join(', ')}`);
    this.mode = mode;
    this.settings = routerSettings(options.settings);
    this.stats = new RunStats();
    // What the router's Application_Gateway_Half_Hour would hold: not reset with the run's
    // figures (resetStats), as the gateway's half-hour view is not.
    this.halfHours = new RouterHalfHours({ lateTimeoutMs: this.settings.lateTimeoutMs, now: options.now });
    this.rnd = prng(options.seed === undefined ? Date.now() : options.seed);
    this.mix = new QueryMix(options.templates, this.rnd);
    this.invalidRate = options.invalidRate || 0;
    this.invalidKinds = options.invalidKinds || [...REJECT_KINDS, ...FATAL_KINDS];
    const targets = options.targets || [{ host: '127.0.0.1', port: 5000 }];
    this.pcap = options.pcap ? new PcapWriter(options.pcap) : null;
    this.connections = sides.map((side, i) => {
      const t = targets[Math.min(i, targets.length - 1)];
      const c = new RouterConnection({
        host: t.host, port: t.port, side, settings: this.settings, stats: this.stats, injection: options.injection, tls: options.tls, rnd: this.rnd,
        desKey: options.desKey, pcap: this.pcap, profile: options.profile, halfHours: this.halfHours,
      });
      c.on('reply', (logical, msg, latency) => this.onReply(logical, msg, latency));
      c.on('lost', (logical) => this.onSettled(logical));
      c.on('open', () => this.emit('open', side));
      c.on('down', (reason) => this.emit('down', side, reason));
      return c;
    });
    const preferred = options.preferredSide || sides[0];
    this.primary = this.connections.find((c) => c.side === preferred) || this.connections[0];
    this.outstanding = new Set(); // logical queries not yet settled
    this.waiters = [];
    this.alternateNext = 0;
    this.cancelled = false;
  }

  /**
   * Opens every side. Rejects with an OperatorError as soon as every side has failed once
   * (refused, closed by the host, ...) with the reasons, or after waitOpenMs.
   */
  async start({ waitOpenMs = 5000 } = {}) {
    const failures = new Map(); // side -> why its first attempt ended without a session
    let timer;
    let onDown;
    const outcome = new Promise((resolve) => {
      let opened = 0;
      const check = () => {
        if (opened === this.connections.length) resolve(null);
        else if (failures.size === this.connections.length) resolve('failed');
      };
      onDown = (c) => (reason) => {
        if (!c.isOpen && !failures.has(c.side)) failures.set(c.side, reason);
        check();
      };
      for (const c of this.connections) {
        if (c.isOpen) opened++;
        else c.once('open', () => { opened++; failures.delete(c.side); check(); });
        c.on('down', (c.startDown = onDown(c)));
      }
      timer = setTimeout(() => resolve('timeout'), waitOpenMs);
      check();
    });
    for (const c of this.connections) c.start();
    const result = await outcome;
    clearTimeout(timer);
    for (const c of this.connections) c.off('down', c.startDown);
    if (result === null) return;
    // A plain router turned away at once may have met a TLS port: a bare close looks like an
    // allowlist's. One TLS handshake tells them apart.
    for (const c of this.connections) {
      const reason = failures.get(c.side);
      const turnedAway = reason !== undefined && reason.startsWith('closed by the host right after connecting');
      if (c.tlsOptions === null && turnedAway && await speaksTls(c.host, c.port)) {
        failures.set(c.side, 'the host speaks TLS and this router does not: add --tls '
          + '(and --tls-ca with its CA, --tls-cert/--tls-key if it asks for a client certificate)');
      }
    }
    const why = this.connections.map((c) => `${c.side} ${c.host}:${c.port}: ${failures.get(c.side) || `no OPEN_CONF yet (${c.state})`}`).join('; ');
    await Promise.all(this.connections.map((c) => c.stop(0))); // no retry timer may outlive the failure
    throw new OperatorError(result === 'failed' ? `no session opened: ${why}` : `no session opened within ${waitOpenMs} ms: ${why}`);
  }

  openConnections() {
    return this.connections.filter((c) => c.isOpen);
  }

  /** Sends one logical query by the fault-tolerance mode; false when no side could take it. */
  query(fields = this.mix.next(), scheduledAt = performance.now()) {
    if (this.invalidRate > 0 && this.rnd() < this.invalidRate) this.injectInvalid();
    const logical = { scheduledAt, outstanding: 0, settled: false };
    let sent = 0;
    switch (this.mode) {
      case 'duplicate': {
        // Every side gets a copy; all but the preferred one are flagged Duplicate.
        for (const c of this.openConnections()) sent += c.send({ ...fields, duplicate: c !== this.primary }, logical) ? 1 : 0;
        break;
      }
      case 'alternate': {
        const open = this.openConnections();
        if (open.length > 0) sent = open[this.alternateNext++ % open.length].send(fields, logical) ? 1 : 0;
        break;
      }
      case 'hot-standby': {
        const target = this.primary.isOpen ? this.primary : this.openConnections()[0];
        if (target) sent = target.send(fields, logical) ? 1 : 0;
        break;
      }
      default:
        sent = this.primary.send(fields, logical) ? 1 : 0;
    }
    if (sent === 0) {
      this.stats.unsent++; // no side had an open session at that moment
      return false;
    }
    this.stats.sent++;
    this.outstanding.add(logical);
    return true;
  }

  injectInvalid() {
    const open = this.openConnections();
    if (open.length === 0) return;
    const kind = this.invalidKinds[Math.floor(this.rnd() * this.invalidKinds.length)];
    open[Math.floor(this.rnd() * open.length)].sendInvalid(kind);
  }

  onReply(logical, msg, latency) {
    this.onSettled(logical);
    this.emit('reply', msg, latency);
  }

  onSettled(logical) {
    this.outstanding.delete(logical);
    if (this.outstanding.size === 0 && this.waiters.length > 0) {
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    }
    this.emit('settled');
  }

  /** Waits until every logical query is settled, or timeoutMs. */
  drain(timeoutMs = 2000) {
    if (this.outstanding.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /**
   * Open loop: `rate` queries/s for `durationMs`. Each query has a scheduled time; the sender
   * catches up after a stall instead of skipping, and latency counts from the schedule.
   */
  async runOpenLoop({ rate, durationMs, onTick }) {
    const interval = 1000 / rate;
    const start = performance.now();
    const total = Math.floor((durationMs / 1000) * rate);
    let i = 0;
    await new Promise((resolve) => {
      const tick = () => {
        const now = performance.now();
        while (i < total && start + i * interval <= now) {
          this.query(this.mix.next(), start + i * interval);
          i++;
        }
        if (onTick) onTick();
        if (i >= total || this.cancelled) {
          resolve();
          return;
        }
        setTimeout(tick, Math.max(0, Math.min(10, start + i * interval - performance.now())));
      };
      tick();
    });
    return i;
  }

  /** Closed loop: keep `window` queries outstanding for `durationMs` (or until `count` sent). */
  async runClosedLoop({ window, durationMs = Infinity, count = Infinity, onTick }) {
    const until = performance.now() + durationMs;
    let sent = 0;
    await new Promise((resolve) => {
      let done = false;
      const fill = () => {
        if (done) return;
        while (this.outstanding.size < window && sent < count && performance.now() < until) {
          if (!this.query()) break;
          sent++;
        }
        if (onTick) onTick();
        if (sent >= count || performance.now() >= until || this.cancelled) {
          done = true;
          this.off('settled', fill);
          clearInterval(retry);
          resolve();
        }
      };
      // A side may be down for a while; keep trying to fill the window.
      const retry = setInterval(fill, 50);
      this.on('settled', fill);
      fill();
    });
    return sent;
  }

  /** Starts the books afresh (after an unmeasured warm-up phase). */
  resetStats() {
    this.stats = new RunStats();
    for (const c of this.connections) c.stats = this.stats;
  }

  /** Ends a running open or closed loop early (Ctrl-C); stop() then settles the books. */
  cancel() {
    this.cancelled = true;
  }

  /**
   * End of a run: wait for stragglers, count the rest as timeouts, CLOSE_REQ every side. The
   * summary has the run's figures and `halfHours` (RouterHalfHours.toJSON).
   */
  async stop({ drainMs = 1000 } = {}) {
    await this.drain(drainMs);
    this.stats.timeout += this.outstanding.size;
    for (const l of this.outstanding) l.settled = true;
    this.outstanding.clear();
    await Promise.all(this.connections.map((c) => c.stop()));
    if (this.pcap) this.pcap.close();
    return { ...this.stats.summary(), halfHours: this.halfHours.toJSON() };
  }
}

module.exports = { Router };
