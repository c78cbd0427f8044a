'use strict';

// Loaded with --require into the backend (bench/plain-backend.js) by bench/critical-path.js, never
// by the product: it notes when node:http hands each request over (its bytes read and its head
// parsed) and when each answer is written (bench/hops.js), and writes them at exit to the file
// CRITICAL_PATH_HOPS_FILE names.

const diagnostics = require('node:diagnostics_channel');
const { Moments, MOMENT, noteSockets } = require('./hops');

const moments = new Moments();
const accepted = new WeakSet();

diagnostics.subscribe('net.server.socket', ({ socket }) => accepted.add(socket));
diagnostics.subscribe('http.server.request.start', () => moments.add(MOMENT['backend has the request']));
noteSockets(moments, { written: (socket) => (accepted.has(socket) ? MOMENT['answer written'] : undefined) });

process.on('SIGTERM', () => process.exit(0));
