'use strict';

// Loaded with --require into a gateway or a bare proxy by bench/critical-path.js for its hop
// table, never by the product: it notes when bytes arrive from and leave for the router and the
// backend (bench/hops.js), and writes them at exit to the file CRITICAL_PATH_HOPS_FILE names.
// The step stamps (critical-path-probe.js) run apart from it, in runs of their own: their work
// would count in the middle's hops. A new router connection starts the moments again: the
// gateway's warm-up and the bench's first connection do not count. Nothing else may connect
// during a run: an admin-port request would count as a router's.

const diagnostics = require('node:diagnostics_channel');
const fs = require('node:fs');
const net = require('node:net');
const { Moments, MOMENT } = require('./hops');

const moments = new Moments();
const routers = new WeakSet(); // sockets the process accepted
const backends = new WeakSet(); // sockets it opened

diagnostics.subscribe('net.server.socket', ({ socket }) => {
  routers.add(socket);
  moments.clear();
});
diagnostics.subscribe('net.client.socket', ({ socket }) => backends.add(socket));

// Node publishes no channel for a socket's reads and writes: these two are wrapped.
const { push } = net.Socket.prototype;
net.Socket.prototype.push = function notedPush(chunk, encoding) {
  if (chunk !== null) {
    if (routers.has(this)) moments.add(MOMENT['middle bytes in']);
    else if (backends.has(this)) moments.add(MOMENT['answer bytes in']); // every chunk: the hops count from the first
  }
  return push.call(this, chunk, encoding);
};
// Every write passes here once: Socket's _writev hands its chunks to _writeGeneric too.
const { _writeGeneric: writeGeneric } = net.Socket.prototype;
net.Socket.prototype._writeGeneric = function notedWrite(...args) {
  if (routers.has(this)) moments.add(MOMENT['reply written']);
  else if (backends.has(this)) moments.add(MOMENT['request written']);
  return writeGeneric.apply(this, args);
};

process.on('exit', () => fs.writeFileSync(process.env.CRITICAL_PATH_HOPS_FILE, JSON.stringify(moments)));
