'use strict';

// Loaded with --require into the backend (bench/plain-backend.js) by bench/critical-path.js, never
// by the product: it notes when node:http hands each request over (its bytes read and its head
// parsed) and when each answer is written (bench/hops.js), and writes them at exit to the file
// CRITICAL_PATH_HOPS_FILE names.

const diagnostics = require('node:diagnostics_channel');
const fs = require('node:fs');
const net = require('node:net');
const { Moments, MOMENT } = require('./hops');

const moments = new Moments();
const accepted = new WeakSet();

diagnostics.subscribe('net.server.socket', ({ socket }) => accepted.add(socket));
diagnostics.subscribe('http.server.request.start', () => moments.add(MOMENT['backend has the request']));
// Node publishes no channel for a socket's writes: this one is wrapped. Every write passes here
// once: Socket's _writev hands its chunks to _writeGeneric too.
const { _writeGeneric: writeGeneric } = net.Socket.prototype;
net.Socket.prototype._writeGeneric = function notedWrite(...args) {
  if (accepted.has(this)) moments.add(MOMENT['answer written']);
  return writeGeneric.apply(this, args);
};

process.on('SIGTERM', () => process.exit(0));
process.on('exit', () => fs.writeFileSync(process.env.CRITICAL_PATH_HOPS_FILE, JSON.stringify(moments)));
