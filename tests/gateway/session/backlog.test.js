'use strict';

// The session's backlog alone: order, the byte bound, the barrier rule, and what a closed
// connection leaves in it.

const assert = require('node:assert/strict');
const { MESSAGE_TYPES: T } = require('../../../lib/protocol');
const { Backlog } = require('../../../gateway/session/backlog');

const query = (invokeId) => ({ typeId: T.QUERY_REQ, invokeId });

describe('Backlog (unit)', () => {
  it('gives requests back in the order they were held, with their size and arrival time', () => {
    const b = new Backlog(1000);
    assert.equal(b.hold(query(1), 10, 5), false);
    assert.equal(b.hold(query(2), 20, 6), false);
    assert.deepEqual([b.length, b.bytes], [2, 30]);
    assert.equal(b.peek().msg.invokeId, 1);
    assert.deepEqual(b.take(), { msg: query(1), size: 10, receivedAt: 5 });
    assert.deepEqual([b.length, b.bytes], [1, 20]);
    assert.equal(b.take().msg.invokeId, 2);
    assert.deepEqual([b.length, b.bytes, b.peek()], [0, 0, undefined]);
    assert.equal(b.items.length, 0, 'emptied, not left growing');
  });

  it('asks to stop reading past maxBytes, and to read again only at half of it', () => {
    const b = new Backlog(100);
    assert.equal(b.hold(query(1), 60, 0), false);
    assert.equal(b.hold(query(2), 60, 0), true, '120 bytes > 100');
    assert.equal(b.mayResume, false);
    b.take();
    assert.equal(b.mayResume, false, '60 bytes: over half of 100');
    assert.equal(b.hold(query(3), 1, 0), false);
    b.take();
    assert.equal(b.mayResume, true, '1 byte');
  });

  it('an OPEN_REQ or CLOSE_REQ held stops reading until it is taken, whatever the bytes', () => {
    const b = new Backlog(1_000_000);
    b.hold(query(1), 10, 0);
    assert.equal(b.hold({ typeId: T.CLOSE_REQ, invokeId: 2 }, 8, 0), true);
    assert.equal(b.hold(query(3), 10, 0), true, 'still behind the barrier');
    assert.equal(b.mayResume, false);
    b.take();
    assert.equal(b.mayResume, false);
    assert.equal(b.take().msg.typeId, T.CLOSE_REQ);
    assert.equal(b.mayResume, true);
    assert.equal(b.hold({ typeId: T.OPEN_REQ, invokeId: 4 }, 8, 0), true);
  });

  it('drop() hands back what waited, oldest first, and leaves it empty', () => {
    const b = new Backlog(100);
    for (let i = 1; i <= 3; i++) b.hold(query(i), 10, i);
    b.take();
    b.hold({ typeId: T.OPEN_REQ, invokeId: 9 }, 10, 4);
    assert.deepEqual(b.drop().map((x) => x.msg.invokeId), [2, 3, 9]);
    assert.deepEqual([b.length, b.bytes, b.barrierHeld, b.mayResume], [0, 0, false, true]);
  });
});
