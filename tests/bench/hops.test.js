'use strict';

// bench/hops.js: how bench/critical-path.js lines up the moments the router, the middle and the
// backend note into the hops of a sequential round trip.

const assert = require('node:assert/strict');
const { MOMENT, HOPS, Moments, hopTimes } = require('../../bench/hops');

/** {at, moment} of [[time, moment name], ...]. */
const noted = (pairs) => ({ at: pairs.map(([at]) => at), moment: pairs.map(([, name]) => MOMENT[name]) });

/** One round trip starting at t0, as the three processes note it; hop h takes 11 + h us. */
function roundTrip(t0) {
  const at = [t0];
  for (let h = 1; h < 8; h++) at.push(at[h - 1] + 10 + h);
  return {
    router: [[at[0], 'router write'], [at[7], 'router bytes in']],
    middle: [[at[1], 'middle bytes in'], [at[2], 'request written'], [at[5], 'answer bytes in'], [at[6], 'reply written']],
    backend: [[at[3], 'backend has the request'], [at[4], 'answer written']],
    at,
    end: at[7],
  };
}

function lists(...trips) {
  const side = (name) => noted(trips.flatMap((trip) => trip[name]));
  return [side('router'), side('middle'), side('backend')];
}

describe('bench/hops.js', () => {
  it('lines the three processes\' moments up into the round trip\'s hops, and the router\'s own time between round trips', () => {
    const first = roundTrip(1000);
    const second = roundTrip(first.end + 7);
    const times = hopTimes(...lists(first, second));
    assert.equal(times.length, HOPS.length);
    for (let h = 0; h < 7; h++) assert.deepEqual(times[h], [11 + h, 11 + h], HOPS[h][2]);
    assert.deepEqual(times[7], [7], 'the router: reply in -> its next query written, after a round trip counted');
  });

  it('ends each hop at the first of several chunks, at the middle and at the router', () => {
    const chunked = roundTrip(1000);
    chunked.middle.splice(3, 0, [chunked.at[5] + 2, 'answer bytes in']); // the answer's second chunk
    chunked.router.push([chunked.end + 3, 'router bytes in']); // the reply's second chunk
    const next = roundTrip(chunked.end + 9);
    const times = hopTimes(...lists(chunked, next));
    assert.deepEqual(times[4], [15, 15], 'answer write -> the first chunk in the middle');
    assert.deepEqual(times[5], [16, 16], 'the middle\'s side from the first chunk');
    assert.deepEqual(times[6], [17, 17], 'reply write -> the first chunk at the router');
    assert.deepEqual(times[7], [9], 'the router\'s own time from its first chunk');
  });

  it('counts no round trip with a moment missing, even when a later moment comes twice', () => {
    const broken = roundTrip(1000);
    broken.backend = [[broken.at[4], 'answer written'], [broken.at[4] + 1, 'answer written']]; // the request's moment lost
    const after = roundTrip(broken.end + 5);
    const times = hopTimes(...lists(broken, after));
    for (let h = 0; h < 7; h++) assert.deepEqual(times[h], [11 + h], HOPS[h][2]);
    assert.deepEqual(times[7], [], 'no router time after a round trip not counted');
  });

  it('counts no router time when something comes between the reply and the next query', () => {
    const first = roundTrip(1000);
    first.middle.push([first.end + 2, 'middle bytes in']); // bytes from the router before its next query
    const second = roundTrip(first.end + 7);
    const times = hopTimes(...lists(first, second));
    assert.deepEqual(times[0], [11, 11]);
    assert.deepEqual(times[7], []);
  });

  it('Moments keeps every moment, growing past its first capacity', () => {
    const moments = new Moments(2);
    for (let i = 0; i < 5; i++) moments.add(i % 8);
    const { at, moment } = moments.toJSON();
    assert.deepEqual(moment, [0, 1, 2, 3, 4]);
    assert.equal(at.length, 5);
    for (let i = 1; i < 5; i++) assert.ok(at[i] >= at[i - 1], 'in the order they were added, on a monotonic clock');
    moments.clear();
    assert.deepEqual(moments.toJSON(), { at: [], moment: [] });
  });
});
