'use strict';

// The router's end of one connection, as the conformance kit plays it: a real socket (or TLS),
// the project's reader for what the host sends, and a record of every frame both ways for the
// report. It never retries and never answers on its own: a case sees exactly what the host did.

const net = require('node:net');
const tls = require('node:tls');
const { performance } = require('node:perf_hooks');
const { MessageReader, DIRECTION } = require('../../lib/protocol');

/** Frames kept per connection for the report: enough to show what went wrong, bounded for a 200-deep case. */
const MAX_RECORDED = 60;

class Peer {
  /**
   * target: {host, port, tls (tls.connect options or null)}; resolves once connected, or rejects
   * with the socket's error after connectTimeoutMs.
   */
  static connect(target, { connectTimeoutMs = 3000, name = 'connection' } = {}) {
    return new Promise((resolve, reject) => {
      const options = { host: target.host, port: target.port };
      const socket = target.tls ? tls.connect({ ...options, ...target.tls }) : net.connect(options);
      const ready = target.tls ? 'secureConnect' : 'connect';
      const timer = setTimeout(() => {
        socket.destroy();
        reject(Object.assign(new Error(`no connection within ${connectTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
      }, connectTimeoutMs);
      const fail = (err) => {
        clearTimeout(timer);
        reject(err);
      };
      socket.once('error', fail);
      socket.once(ready, () => {
        clearTimeout(timer);
        socket.off('error', fail);
        resolve(new Peer(socket, name));
      });
    });
  }

  constructor(socket, name) {
    this.socket = socket;
    this.name = name;
    this.startedAt = performance.now();
    socket.setNoDelay(true);
    this.messages = []; // decoded, each with receivedAt (ms since the connection started)
    this.errors = []; // frames from the host that did not decode
    this.frames = []; // {dir: 'out' | 'in', at, bytes | message | error} for the report
    this.framesSeen = 0;
    this.closed = false;
    this.hostEnded = false; // the host's FIN (or reset) came first
    this.closedAt = null;
    this.waiters = new Set();
    this.reader = this.makeReader(undefined);
    socket.on('data', (chunk) => this.reader.push(chunk));
    socket.on('end', () => {
      if (!this.closed) this.hostEnded = true;
    });
    socket.on('error', (err) => { this.socketError = err.code || err.message; });
    socket.on('close', () => {
      if (!this.closedByUs) this.hostEnded = true;
      this.closed = true;
      this.closedAt = this.now();
      this.check();
    });
  }

  makeReader(cipher) {
    return new MessageReader({
      direction: DIRECTION.HOST_TO_ROUTER,
      cipher,
      onMessage: (m) => {
        m.receivedAt = this.now();
        this.messages.push(m);
        this.record({ dir: 'in', message: m });
        this.check();
      },
      onError: (err) => {
        this.errors.push(err);
        this.record({ dir: 'in', error: `${err.reason}: ${err.message}` });
        this.check();
      },
    });
  }

  /** On an encrypted session the host's tags are decrypted from the next frame on. */
  setCipher(cipher) {
    this.reader.setCipher(cipher);
  }

  now() {
    return performance.now() - this.startedAt;
  }

  record(entry) {
    this.framesSeen++;
    if (this.frames.length < MAX_RECORDED) this.frames.push({ at: Math.round(this.now() * 10) / 10, ...entry });
  }

  /** Writes bytes as one write; `frames`: the whole frames in them, recorded for the report (default: buf itself). */
  send(buf, frames = [buf]) {
    for (const f of frames) this.record({ dir: 'out', bytes: f });
    if (!this.socket.destroyed) this.socket.write(buf);
    return this.now();
  }

  /** Writes raw pieces (a frame split or several coalesced) without recording them: the caller records the frames. */
  write(piece) {
    if (!this.socket.destroyed) this.socket.write(piece);
  }

  check() {
    for (const w of this.waiters) w();
  }

  /** The first message matching pred, or null after ms (or once the connection is closed). */
  waitFor(pred, ms) {
    return this.until(() => this.messages.find(pred), ms);
  }

  /** Resolves once probe() returns something other than undefined (that value), or null after ms or on close. */
  until(probe, ms, { closeEnds = true } = {}) {
    return new Promise((resolve) => {
      let timer = null;
      const attempt = () => {
        const v = probe();
        if (v !== undefined || (closeEnds && this.closed)) {
          clearTimeout(timer);
          this.waiters.delete(attempt);
          resolve(v === undefined ? null : v);
          return true;
        }
        return false;
      };
      if (attempt()) return;
      timer = setTimeout(() => {
        this.waiters.delete(attempt);
        resolve(probe() ?? null);
      }, ms);
      this.waiters.add(attempt);
    });
  }

  /** Every message answering one of ids, once each has at least one reply (or after ms): Map id -> [replies]. */
  async repliesTo(ids, ms) {
    const want = new Set(ids);
    const count = () => {
      let n = 0;
      const seen = new Set();
      for (const m of this.messages) if (want.has(m.invokeId) && !seen.has(m.invokeId)) { seen.add(m.invokeId); n++; }
      return n;
    };
    await this.until(() => (count() === want.size ? true : undefined), ms);
    return this.byInvokeId();
  }

  byInvokeId() {
    const map = new Map();
    for (const m of this.messages) {
      if (!map.has(m.invokeId)) map.set(m.invokeId, []);
      map.get(m.invokeId).push(m);
    }
    return map;
  }

  /** True once the host has closed the connection (FIN or reset) within ms. */
  async waitClosed(ms) {
    await this.until(() => (this.closed ? true : undefined), ms, { closeEnds: true });
    return this.closed && this.hostEnded;
  }

  /** Quiet for ms: lets a second, wrong reply arrive before a case counts. */
  settle(ms) {
    return new Promise((r) => setTimeout(r, ms));
  }

  close() {
    this.closedByUs = !this.closed;
    this.socket.destroy();
  }
}

module.exports = { Peer };
