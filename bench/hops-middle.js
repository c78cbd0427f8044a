'use strict';

// Loaded with --require into a gateway or a bare proxy by bench/critical-path.js for its hop
// table, never by the product: it notes when bytes arrive from and leave for the router and the
// backend (bench/hops.js), and writes them at exit to the file CRITICAL_PATH_HOPS_FILE names.
// The step stamps (critical-path-probe.js) run apart from it, in runs of their own: their work
// would count in the middle's hops. A new router connection starts the moments again: the
// gateway's warm-up and the bench's first connection do not count.

const fs = require('node:fs');
const net = require('node:net');
const { Moments, MOMENT } = require('./hops');

const moments = new Moments();
const routers = new WeakSet();

// A router's connection is one the process accepted; the backend's, a TCP one it opened (its
// stdout and stderr are sockets too, without a peer port).
const fromRouter = (socket) => Boolean(socket._server);
const toBackend = (socket) => !socket._server && typeof socket.remotePort === 'number';

const { push } = net.Socket.prototype;
net.Socket.prototype.push = function notedPush(chunk, encoding) {
  if (chunk !== null) {
    if (fromRouter(this)) {
      if (!routers.has(this)) {
        routers.add(this);
        moments.clear();
      }
      moments.add(MOMENT['middle bytes in']);
    } else if (toBackend(this)) {
      moments.add(MOMENT['answer bytes in']); // every chunk: the hops count from the first
    }
  }
  return push.call(this, chunk, encoding);
};

// Every write passes here once: Socket's _writev hands its chunks to _writeGeneric too.
const { _writeGeneric: writeGeneric } = net.Socket.prototype;
net.Socket.prototype._writeGeneric = function notedWrite(...args) {
  if (fromRouter(this)) moments.add(MOMENT['reply written']);
  else if (toBackend(this)) moments.add(MOMENT['request written']);
  return writeGeneric.apply(this, args);
};

process.on('exit', () => fs.writeFileSync(process.env.CRITICAL_PATH_HOPS_FILE, JSON.stringify(moments)));
