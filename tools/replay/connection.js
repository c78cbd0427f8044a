'use strict';

// One replayed stream's connection to the host: the router's frames written as they are given
// (waiting for the socket to drain when the host reads slower than they come), and each answer
// handed to the caller the moment it is decoded, with the time it arrived. Nothing is kept here:
// a capture of a quarter hour of a busy router side is matched as it comes, not stored twice.

const net = require('node:net');
const { performance } = require('node:perf_hooks');
const { MessageReader, DIRECTION } = require('../../lib/protocol');

class ReplayConnection {
  /**
   * target: {host, port}; onAnswer(message, at): each decoded answer (at: performance.now());
   * onUndecoded(err): a frame from the host that does not decode. Resolves once connected.
   */
  static connect(target, handlers, { connectTimeoutMs = 3000 } = {}) {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: target.host, port: target.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(Object.assign(new Error(`no connection within ${connectTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
      }, connectTimeoutMs);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new ReplayConnection(socket, handlers));
      });
    });
  }

  constructor(socket, { onAnswer, onUndecoded, onClose }) {
    this.socket = socket;
    this.closed = false;
    socket.setNoDelay(true);
    this.reader = new MessageReader({
      direction: DIRECTION.HOST_TO_ROUTER,
      onMessage: (m) => onAnswer(m, performance.now()),
      onError: (err) => onUndecoded(err),
    });
    socket.on('data', (chunk) => this.reader.push(chunk));
    socket.on('error', () => {}); // the close that follows is what counts: no answer after it
    socket.on('close', () => {
      this.closed = true;
      onClose();
    });
  }

  /** On an encrypted session the host's tags are decrypted from the next frame on. */
  setCipher(cipher) {
    this.reader.setCipher(cipher);
  }

  /** Writes one frame; resolves with the time it was handed to the socket, after the socket drained if it had to. */
  async send(bytes) {
    if (this.socket.writableNeedDrain && !this.closed) await this.drained();
    if (this.closed) return null;
    const at = performance.now();
    this.socket.write(bytes);
    return at;
  }

  drained() {
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  close() {
    this.socket.destroy();
  }
}

module.exports = { ReplayConnection };
