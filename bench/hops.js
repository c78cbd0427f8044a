'use strict';

// The hops of a sequential round trip between processes, for bench/critical-path.js: the router
// (the bench's own client), the gateway or bare proxy in the middle, and the backend each note
// the moments bytes leave and arrive on CLOCK_MONOTONIC (process.hrtime), which every process on
// the machine reads alike, and the bench lines them up. With one query in flight the moments come
// in a fixed order, router write -> ... -> router bytes in; a round trip is counted when all eight
// follow in that order (an extra chunk of an answer in between is passed over), and the router's
// own time when its next write follows a counted round trip.
//
// Loaded with --require into the backend (CRITICAL_PATH_HOPS=backend), it notes each request as
// node:http hands it over (its bytes read and parsed) and each answer write, and writes them at
// exit to the file CRITICAL_PATH_HOPS_FILE names (JSON), as the probe does in the middle. Never
// part of the product.

const net = require('node:net');
const fs = require('node:fs');

const MOMENTS = [
  'router write', 'middle bytes in', 'request written', 'backend has the request',
  'answer written', 'answer bytes in', 'reply written', 'router bytes in',
];
const M = Object.fromEntries(MOMENTS.map((m, i) => [m, i]));
/** [from, to, what the hop is]: the table's rows. */
const HOPS = [
  ['router write', 'middle bytes in', 'router write -> its bytes in the middle'],
  ['middle bytes in', 'request written', 'the middle: bytes in -> request written'],
  ['request written', 'backend has the request', 'request write -> the backend has it'],
  ['backend has the request', 'answer written', 'the backend: request -> answer written'],
  ['answer written', 'answer bytes in', 'answer write -> its bytes in the middle'],
  ['answer bytes in', 'reply written', 'the middle: bytes in -> reply written'],
  ['reply written', 'router bytes in', 'reply write -> its bytes at the router'],
  ['router bytes in', 'router write', 'the router: reply in -> its next query written'],
];

class Moments {
  constructor(max = 400_000) {
    this.t = new Float64Array(max);
    this.m = new Uint8Array(max);
    this.n = 0;
  }

  add(moment) {
    if (this.n === this.t.length) return;
    this.t[this.n] = Number(process.hrtime.bigint()) / 1000; // microseconds, exact below 2^53
    this.m[this.n++] = moment;
  }

  clear() {
    this.n = 0;
  }

  toJSON() {
    return { t: Array.from(this.t.subarray(0, this.n)), m: Array.from(this.m.subarray(0, this.n)) };
  }
}

/**
 * Each hop's times, from the three processes' moments ({t, m} each): round trips whose eight
 * moments came in order; the others (a chunk too many, the run's edges) are not counted.
 */
function hopTimes(...lists) {
  const all = [];
  for (const { t, m } of lists) for (let i = 0; i < t.length; i++) all.push([t[i], m[i]]);
  all.sort((a, b) => a[0] - b[0]);
  const times = HOPS.map(() => []);
  const routerOwn = times[HOPS.length - 1];
  let seen = null;
  let ended = null; // when the last counted round trip's reply reached the router
  for (const [t, m] of all) {
    if (m === 0) {
      if (ended !== null) routerOwn.push(t - ended);
      seen = [t];
      ended = null;
    } else if (seen !== null && m === seen.length) {
      seen.push(t);
      if (seen.length === MOMENTS.length) {
        for (let h = 0; h < MOMENTS.length - 1; h++) times[h].push(seen[h + 1] - seen[h]);
        ended = t;
        seen = null;
      }
    } else if (seen !== null && m > seen.length) {
      seen = null; // a moment missing: this round trip is not counted
    } else if (m !== M['router bytes in']) {
      ended = null; // something came between the reply and the next query
    }
  }
  return times;
}

/** The router's side, in the bench's own process: writes to and bytes from the socket to the port watch(port) names, until restore(). */
function routerMoments() {
  const moments = new Moments();
  let port = -1;
  const { push, _writeGeneric: writeGeneric } = net.Socket.prototype;
  net.Socket.prototype.push = function notedPush(chunk, encoding) {
    if (chunk !== null && this.remotePort === port) moments.add(M['router bytes in']);
    return push.call(this, chunk, encoding);
  };
  net.Socket.prototype._writeGeneric = function notedWrite(...args) {
    if (this.remotePort === port) moments.add(M['router write']);
    return writeGeneric.apply(this, args);
  };
  moments.watch = (p) => { port = p; };
  moments.restore = () => {
    net.Socket.prototype.push = push;
    net.Socket.prototype._writeGeneric = writeGeneric;
  };
  return moments;
}

if (process.env.CRITICAL_PATH_HOPS === 'backend') {
  const http = require('node:http');
  const moments = new Moments();
  const { emit } = http.Server.prototype;
  http.Server.prototype.emit = function notedEmit(event, ...args) {
    if (event === 'request') moments.add(M['backend has the request']);
    return emit.call(this, event, ...args);
  };
  const { _writeGeneric: writeGeneric } = net.Socket.prototype;
  net.Socket.prototype._writeGeneric = function notedWrite(...args) {
    if (typeof this.remotePort === 'number') moments.add(M['answer written']);
    return writeGeneric.apply(this, args);
  };
  process.on('SIGTERM', () => process.exit(0));
  process.on('exit', () => fs.writeFileSync(process.env.CRITICAL_PATH_HOPS_FILE, JSON.stringify(moments)));
}

module.exports = {
  Moments, M, HOPS, hopTimes, routerMoments,
};
