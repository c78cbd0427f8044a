'use strict';

// The hops of a sequential round trip between processes, for bench/critical-path.js: the router
// (the bench's own client, through runClient's observe hook), the gateway or bare proxy in the
// middle (bench/hops-middle.js) and the backend (bench/hops-backend.js) each note the moments
// bytes leave and arrive on CLOCK_MONOTONIC (process.hrtime), which every process on the machine
// reads alike, and the bench lines them up. With one query in flight the moments come in a fixed
// order, router write -> ... -> router bytes in; a round trip is counted when all eight follow in
// that order (an extra chunk in between is passed over: a hop ends at the first), and the router's
// own time when its next write follows a counted round trip with nothing between.

const fs = require('node:fs');
const net = require('node:net');

/** The moments, numbered in the order a round trip passes them: hopTimes() relies on it. */
const MOMENT = {
  'router write': 0,
  'middle bytes in': 1,
  'request written': 2,
  'backend has the request': 3,
  'answer written': 4,
  'answer bytes in': 5,
  'reply written': 6,
  'router bytes in': 7,
};
const ROUND_TRIP = Object.keys(MOMENT).length;
/** [from, to, what the hop is]: the table's rows, the last from a round trip's end to the next one's start. */
const HOPS = [
  ['router write', 'middle bytes in', 'router write -> its bytes in the middle'],
  ['middle bytes in', 'request written', 'the middle: bytes in -> request written'],
  ['request written', 'backend has the request', 'request write -> the backend has it (its head parsed)'],
  ['backend has the request', 'answer written', 'the backend: request -> answer written'],
  ['answer written', 'answer bytes in', 'answer write -> its bytes in the middle'],
  ['answer bytes in', 'reply written', 'the middle: bytes in -> reply written'],
  ['reply written', 'router bytes in', 'reply write -> its bytes at the router'],
  ['router bytes in', 'router write', 'the router: reply in -> its next query written'],
];

/** Moments as they happen: when (microseconds on the shared clock) and which. Grows as needed. */
class Moments {
  constructor(capacity = 65_536) {
    this.at = new Float64Array(capacity);
    this.moment = new Uint8Array(capacity);
    this.size = 0;
  }

  add(moment) {
    if (this.size === this.at.length) this.grow();
    this.at[this.size] = Number(process.hrtime.bigint()) / 1000; // exact: nanoseconds since boot are far below 2^53
    this.moment[this.size++] = moment;
  }

  grow() {
    const at = new Float64Array(this.at.length * 2);
    const moment = new Uint8Array(this.at.length * 2);
    at.set(this.at);
    moment.set(this.moment);
    this.at = at;
    this.moment = moment;
  }

  clear() {
    this.size = 0;
  }

  toJSON() {
    return { at: Array.from(this.at.subarray(0, this.size)), moment: Array.from(this.moment.subarray(0, this.size)) };
  }
}

/**
 * Each hop's times, from the three processes' moments ({at, moment} each): round trips whose eight
 * moments came in order; the others (a moment missing, the run's edges) are not counted.
 */
function hopTimes(...lists) {
  const all = [];
  for (const { at, moment } of lists) for (let i = 0; i < at.length; i++) all.push([at[i], moment[i]]);
  all.sort((a, b) => a[0] - b[0]);
  const times = HOPS.map(() => []);
  const routerOwn = times[HOPS.length - 1];
  let seen = null; // the moments of the round trip under way
  let ended = null; // when the last counted round trip's reply reached the router
  for (const [at, moment] of all) {
    if (moment === MOMENT['router write']) {
      if (ended !== null) routerOwn.push(at - ended);
      seen = [at];
      ended = null;
    } else if (seen !== null && moment === seen.length) {
      seen.push(at);
      if (seen.length === ROUND_TRIP) {
        for (let h = 0; h < ROUND_TRIP - 1; h++) times[h].push(seen[h + 1] - seen[h]);
        ended = at;
        seen = null;
      }
    } else if (seen !== null && moment > seen.length) {
      seen = null; // a moment missing: this round trip is not counted
    } else if (moment !== MOMENT['router bytes in']) {
      ended = null; // something came between the reply and the next query
    }
  }
  return times;
}

/**
 * For the preloads (hops-middle.js, hops-backend.js): notes a moment for each chunk a socket reads
 * and each write, as read(socket) and written(socket) name one (undefined: none; no read: reads
 * are not watched), and writes the moments at exit to the file CRITICAL_PATH_HOPS_FILE names. Node
 * publishes no channel for a socket's reads and writes, so Socket's push and _writeGeneric are
 * wrapped; every write passes _writeGeneric once (_writev hands its chunks to it too).
 */
function noteSockets(moments, { read = null, written }) {
  const proto = net.Socket.prototype;
  if (read !== null) {
    const { push } = proto;
    proto.push = function notedPush(chunk, encoding) {
      const moment = chunk === null ? undefined : read(this);
      if (moment !== undefined) moments.add(moment);
      return push.call(this, chunk, encoding);
    };
  }
  const { _writeGeneric: writeGeneric } = proto;
  proto._writeGeneric = function notedWrite(...args) {
    const moment = written(this);
    if (moment !== undefined) moments.add(moment);
    return writeGeneric.apply(this, args);
  };
  process.on('exit', () => fs.writeFileSync(process.env.CRITICAL_PATH_HOPS_FILE, JSON.stringify(moments)));
}

module.exports = {
  MOMENT, HOPS, Moments, hopTimes, noteSockets,
};
