'use strict';

// bench/hops.js: how bench/critical-path.js lines up the moments the router, the middle and the
// backend note into the hops of a sequential round trip.

const assert = require('node:assert/strict');
const net = require('node:net');
const {
  M, HOPS, hopTimes, routerMoments,
} = require('../../bench/hops');

/** {t, m} lists of the moments named, at the times given: [[time, name], ...]. */
const noted = (pairs) => ({ t: pairs.map(([t]) => t), m: pairs.map(([, name]) => M[name]) });

/** One round trip starting at t0, as three processes note it; each hop takes `step` + its index. */
function roundTrip(t0, step = 10) {
  const at = [t0];
  for (let h = 1; h < 8; h++) at.push(at[h - 1] + step + h);
  return {
    router: [[at[0], 'router write'], [at[7], 'router bytes in']],
    middle: [[at[1], 'middle bytes in'], [at[2], 'request written'], [at[5], 'answer bytes in'], [at[6], 'reply written']],
    backend: [[at[3], 'backend has the request'], [at[4], 'answer written']],
    end: at[7],
  };
}

function lists(...trips) {
  const pick = (side) => noted(trips.flatMap((trip) => trip[side]));
  return [pick('router'), pick('middle'), pick('backend')];
}

describe('bench/hops.js', () => {
  it('lines the three processes\' moments up into the round trip\'s hops, and the router\'s own time between round trips', () => {
    const first = roundTrip(1000);
    const second = roundTrip(first.end + 7);
    const times = hopTimes(...lists(first, second));
    assert.equal(times.length, HOPS.length);
    for (let h = 0; h < 7; h++) assert.deepEqual(times[h], [11 + h, 11 + h], HOPS[h][2]);
    assert.deepEqual(times[7], [7], 'the router: reply in -> its next query written, once a round trip was counted before it');
  });

  it('passes over an answer\'s second chunk, and counts no round trip with a moment missing', () => {
    const chunked = roundTrip(1000);
    chunked.middle.splice(3, 0, [chunked.middle[2][0] + 1, 'answer bytes in']); // a second chunk, before the reply
    const broken = roundTrip(chunked.end + 5);
    broken.backend = []; // the backend's moments of this one are missing
    const after = roundTrip(broken.end + 5);
    const times = hopTimes(...lists(chunked, broken, after));
    assert.deepEqual(times[0], [11, 11], 'the first and the third round trips');
    assert.deepEqual(times[5], [16, 16], 'the middle\'s side counts from the answer\'s first chunk');
    assert.deepEqual(times[7], [5], 'the router\'s own time after the first, none after the one not counted');
  });

  it('notes the router\'s writes and bytes in on the watched port only, until restored', async () => {
    const { push, _writeGeneric: writeGeneric } = net.Socket.prototype;
    const server = net.createServer((s) => s.on('data', (d) => s.write(d)));
    await new Promise((resolve) => { server.listen(0, '127.0.0.1', resolve); });
    const { port } = server.address();
    const moments = routerMoments();
    try {
      const client = net.connect(port, '127.0.0.1');
      await new Promise((resolve) => { client.once('connect', resolve); });
      const echo = () => new Promise((resolve) => { client.once('data', resolve); client.write('x'); });
      await echo(); // before watch(): not noted
      moments.watch(port);
      await echo();
      client.destroy();
    } finally {
      moments.restore();
      server.close();
    }
    assert.deepEqual(Array.from(moments.m.subarray(0, moments.n)), [M['router write'], M['router bytes in']]);
    assert.equal(net.Socket.prototype.push, push);
    assert.equal(net.Socket.prototype._writeGeneric, writeGeneric);
  });
});
