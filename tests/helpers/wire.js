'use strict';

// A raw GED-145 client for tests: real loopback socket, frames from lib/protocol, every reply
// decoded and kept, helpers to wait for replies. It is deliberately dumb (no timers, no retries),
// so tests see exactly what the host sent.

const net = require('node:net');
const { performance } = require('node:perf_hooks');
const { once } = require('node:events');
const { MessageReader, serialize, DIRECTION } = require('../../lib/protocol');

class WireClient {
  static async connect(port, host = '127.0.0.1') {
    const c = new WireClient(net.connect(port, host));
    await once(c.socket, 'connect');
    return c;
  }

  constructor(socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    this.messages = [];
    this.errors = [];
    this.waiters = [];
    this.closed = false;
    this.reader = new MessageReader({
      direction: DIRECTION.HOST_TO_ROUTER,
      onMessage: (m) => {
        m.receivedAt = performance.now(); // when this client read it: the router's view of latency
        this.messages.push(m);
        this.check();
      },
      onError: (e) => { this.errors.push(e); this.check(); },
    });
    socket.on('data', (chunk) => this.reader.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => { this.closed = true; this.check(); });
  }

  send(buf) {
    this.socket.write(buf);
    return this;
  }

  /** waitMs: how long the answer is waited for (a router's OpenTimeout is 15 s; 3 s here by default). */
  async open({
    invokeId = 1, version = 2, idleTimeoutMs = 60_000, config = 'test', waitMs = 3000,
  } = {}) {
    this.send(serialize.openReq({ invokeId, version, idleTimeoutMs, config }, { nul: true }));
    const reply = await this.waitFor((m) => m.invokeId === invokeId, waitMs);
    return reply;
  }

  query(invokeId, fields = {}) {
    return this.send(serialize.queryReq({ invokeId, routerCallDay: 1, routerCallKey: invokeId, ...fields }, { nul: true }));
  }

  check() {
    this.waiters = this.waiters.filter((w) => !w());
  }

  /** Resolves with the first message matching pred (or rejects after ms, or when closed). */
  waitFor(pred, ms = 3000) {
    return this.until(() => this.messages.find(pred), ms, 'a matching reply');
  }

  /** Resolves when n messages have arrived in total. */
  waitForCount(n, ms = 5000) {
    return this.until(() => (this.messages.length >= n ? this.messages.slice(0, n) : undefined), ms, `${n} replies`);
  }

  waitClosed(ms = 3000) {
    return this.until(() => (this.closed ? true : undefined), ms, 'the connection to close', true);
  }

  until(probe, ms, what, closeOk = false) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}; got ${JSON.stringify(this.messages.map((m) => [
        m.type, m.invokeId, m.status,
      ]))}`)), ms);
      const attempt = () => {
        const v = probe();
        if (v !== undefined) {
          clearTimeout(timer);
          resolve(v);
          return true;
        }
        if (this.closed && !closeOk) {
          clearTimeout(timer);
          reject(new Error(`connection closed while waiting for ${what}; got ${JSON.stringify(this.messages.map((m) => [m.type, m.invokeId, m.status]))}`));
          return true;
        }
        return false;
      };
      if (!attempt()) this.waiters.push(attempt);
    });
  }

  close() {
    this.socket.destroy();
  }
}

/** Replies per InvokeID: each id that was answered more than once, and each that never was. */
function exactlyOnce(messages, ids) {
  const count = new Map();
  for (const m of messages) count.set(m.invokeId, (count.get(m.invokeId) || 0) + 1);
  return {
    missing: ids.filter((id) => !count.has(id)),
    duplicated: ids.filter((id) => count.get(id) > 1),
  };
}

module.exports = { WireClient, exactlyOnce };
