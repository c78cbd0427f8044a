'use strict';

// A scripted GED-145 host for router-simulator tests: every message from the router goes to
// `script(msg, conn)`, which answers (or not) through conn.send(buf). Real loopback sockets.

const net = require('node:net');
const { MessageReader, DIRECTION } = require('../../lib/protocol');

async function startFakeHost(script) {
  const connections = [];
  const server = net.createServer((socket) => {
    const conn = {
      socket,
      received: [],
      errors: [],
      send: (buf) => { if (!socket.destroyed) socket.write(buf); },
    };
    connections.push(conn);
    const reader = new MessageReader({
      direction: DIRECTION.ROUTER_TO_HOST,
      onMessage: (m) => { conn.received.push(m); script(m, conn); },
      onError: (e) => conn.errors.push(e),
    });
    socket.on('data', (c) => reader.push(c));
    socket.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    connections,
    close() {
      for (const c of connections) c.socket.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

module.exports = { startFakeHost };
