'use strict';

// The bare limit: a GED-145 server with the same framing that answers heartbeats (and queries
// with an empty QUERY_RESP) and does no other work. Prints its port on stdout.

const net = require('node:net');
const { MessageReader, serialize, MESSAGE_TYPES: T, DIRECTION } = require('../lib/protocol');

net.createServer({ noDelay: true }, (socket) => {
  const reader = new MessageReader({
    direction: DIRECTION.ROUTER_TO_HOST,
    onMessage(m) {
      if (m.typeId === T.HEARTBEAT_REQ) socket.write(serialize.heartbeatConf(m.invokeId));
      else if (m.typeId === T.OPEN_REQ) socket.write(serialize.openConf(m.invokeId));
      else if (m.typeId === T.QUERY_REQ) socket.write(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
      else if (m.typeId === T.CLOSE_REQ) socket.write(serialize.closeConf(m.invokeId));
    },
    onError: () => socket.destroy(),
  });
  socket.on('data', (c) => reader.push(c));
  socket.on('error', () => {});
}).listen(0, '127.0.0.1', function listening() {
  process.stdout.write(`${this.address().port}\n`);
});
