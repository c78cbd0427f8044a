'use strict';

// Loaded with --require into a gateway or a bare proxy by bench/critical-path.js for its hop
// table, never by the product: it notes when bytes arrive from and leave for the router and the
// backend (bench/hops.js), and writes them at exit to the file CRITICAL_PATH_HOPS_FILE names.
// The step stamps (critical-path-probe.js) run apart from it, in runs of their own: their work
// would count in the middle's hops. A new router connection starts the moments again: the
// gateway's warm-up and the bench's first connection do not count. Nothing else may connect
// during a run: an admin-port request would count as a router's.

const diagnostics = require('node:diagnostics_channel');
const { Moments, MOMENT, noteSockets } = require('./hops');

const moments = new Moments();
const routers = new WeakSet(); // sockets the process accepted
const backends = new WeakSet(); // sockets it opened

diagnostics.subscribe('net.server.socket', ({ socket }) => {
  routers.add(socket);
  moments.clear();
});
diagnostics.subscribe('net.client.socket', ({ socket }) => backends.add(socket));

const either = (socket, fromRouter, fromBackend) => {
  if (routers.has(socket)) return fromRouter;
  return backends.has(socket) ? fromBackend : undefined;
};
noteSockets(moments, {
  // every chunk of an answer: the hops count from the first
  read: (socket) => either(socket, MOMENT['middle bytes in'], MOMENT['answer bytes in']),
  written: (socket) => either(socket, MOMENT['reply written'], MOMENT['request written']),
});
