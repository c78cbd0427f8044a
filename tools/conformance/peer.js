'use strict';

// The router's end of one connection, as the conformance kit plays it: a real socket (or TLS),
// the project's reader for what the host sends, and a record of every frame both ways for the
// report. It never retries and never answers on its own: a case sees exactly what the host did.

const net = require('node:net');
const tls = require('node:tls');
const { performance } = require('node:perf_hooks');
const { MessageReader, DIRECTION, decodeFrame } = require('../../lib/protocol');
const { messageLine } = require('../../lib/message-line');
const { Exchange } = require('./exchange');

const round = (ms) => Math.round(ms * 10) / 10;

class Peer {
  /**
   * target: {host, port, tls (tls.connect options or null)}; resolves once connected, or rejects
   * with the socket's error after connectTimeoutMs.
   */
  static connect(target, { connectTimeoutMs = 3000, name = 'connection', onHostClose } = {}) {
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
        resolve(new Peer(socket, name, { onHostClose }));
      });
    });
  }

  constructor(socket, name, { onHostClose } = {}) {
    this.socket = socket;
    this.name = name;
    this.startedAt = performance.now();
    socket.setNoDelay(true);
    this.messages = []; // decoded, each with receivedAt (ms since the connection started) and its exchange row
    this.errors = []; // frames from the host that did not decode
    this.requests = new Map(); // invokeId -> {invokeId, typeId, at, row}: what the kit asked on this connection
    this.exchange = new Exchange();
    this.lastInAt = 0;
    this.closed = false;
    this.hostEnded = false; // the host's FIN (or reset) came first
    this.closeExpected = false; // a case waiting for the host to close says so first
    this.closedAt = null;
    this.waiters = new Set();
    this.unmatchedRows = []; // rows of frames the reader has yet to hand over decoded
    this.outCipher = undefined;
    this.reader = this.makeReader(undefined);
    socket.on('data', (chunk) => {
      const at = this.now();
      this.lastInAt = at;
      for (const { row } of this.exchange.add('in', chunk, round(at))) this.unmatchedRows.push(row);
      this.reader.push(chunk);
    });
    socket.on('end', () => {
      if (!this.closed) this.hostEnded = true;
    });
    socket.on('error', (err) => { this.socketError = err.code || err.message; });
    socket.on('close', () => {
      if (!this.closedByUs) this.hostEnded = true;
      this.closed = true;
      this.closedAt = this.now();
      if (this.hostEnded && !this.closeExpected && onHostClose) onHostClose(this);
      this.check();
    });
  }

  makeReader(cipher) {
    return new MessageReader({
      direction: DIRECTION.HOST_TO_ROUTER,
      cipher,
      onMessage: (m) => {
        m.receivedAt = this.now();
        m.row = this.unmatchedRows.shift();
        if (m.row) m.row.text = messageLine(m);
        this.messages.push(m);
        this.check();
      },
      onError: (err) => {
        this.errors.push(err);
        const row = err.fatal ? undefined : this.unmatchedRows.shift(); // a fatal error is the stream's, not one frame's
        if (row) row.text = `! ${err.reason}: ${err.message}`;
        this.check();
      },
    });
  }

  /** On an encrypted session the tags both ways are encrypted from the next frame on. */
  setCipher(cipher) {
    this.outCipher = cipher;
    this.reader.setCipher(cipher);
  }

  now() {
    return performance.now() - this.startedAt;
  }

  /** One TCP write of bytes (a frame, a piece of one, or several coalesced); returns when, in ms since the connection began. */
  send(buf) {
    const at = this.now();
    if (this.socket.destroyed) return at; // never written: not in the exchange either
    for (const { bytes, row } of this.exchange.add('out', buf, round(at))) this.sent(bytes, row, at);
    this.socket.write(buf);
    return at;
  }

  /** The last row the kit wrote before the host closed: what the host had read when it went. */
  lastWrite() {
    const { rows } = this.exchange;
    for (let i = rows.length - 1; i >= 0; i--) if (rows[i].dir === 'out') return { row: rows[i] };
    return null;
  }

  /** A piece of a frame, or several frames: the same as send(), named for what the split cases do. */
  write(piece) {
    return this.send(piece);
  }

  /** A whole frame the kit wrote: decoded for the exchange, and remembered as a request when it has an InvokeID. */
  sent(bytes, row, at) {
    try {
      row.text = messageLine(decodeFrame(bytes, { direction: DIRECTION.ROUTER_TO_HOST, cipher: this.outCipher }));
    } catch (err) {
      row.text = `! ${err.reason || 'error'}: ${err.message}`;
    }
    if (bytes.length < 12) return;
    const invokeId = bytes.readUInt32BE(8);
    if (!this.requests.has(invokeId)) this.requests.set(invokeId, { invokeId, typeId: bytes.readUInt32BE(4), at, row });
  }

  /** The last request sent before ms: a reply with an unknown InvokeID most likely meant it. */
  lastRequestBefore(ms) {
    let last = null;
    for (const r of this.requests.values()) if (r.at <= ms && (last === null || r.at >= last.at)) last = r;
    return last;
  }

  /** A case that waits for the host to close (IdleTimeout, an absurd length) says so, so the close is not a finding. */
  expectClose() {
    this.closeExpected = true;
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
