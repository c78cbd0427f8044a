'use strict';

// The protocol compatibility profile: wire numbers for message types and status codes.

const assert = require('node:assert/strict');
const {
  serialize, serializerFor, decodeFrame, encode, MessageReader, DIRECTION, STATUS, createProfile, resolveProfile, DEFAULT_PROFILE, PROFILE_ERROR_CODES,
} = require('../../lib/protocol');

// GED-125's numbering of heartbeat and close, and a status moved for good measure.
const SWAPPED = {
  messageTypes: {
    HEARTBEAT_REQ: 5, HEARTBEAT_CONF: 6, CLOSE_REQ: 7, CLOSE_CONF: 8,
  },
  status: { E_AG_HOST_ERROR1: 60 },
};

describe('protocol profile', () => {
  it('the default is our numbering', () => {
    assert.equal(serialize.heartbeatReq(1).readUInt32BE(4), 7);
    assert.equal(decodeFrame(serialize.closeReq(2)).type, 'CLOSE_REQ');
  });

  it('encodes and decodes with the profile\'s numbers; the code keeps the names', () => {
    const profile = createProfile(SWAPPED);
    const wire = serializerFor(profile);
    const hb = wire.heartbeatReq(1);
    assert.equal(hb.readUInt32BE(4), 5);
    assert.equal(decodeFrame(hb, { profile }).type, 'HEARTBEAT_REQ');
    assert.equal(wire.closeConf(3).readUInt32BE(4), 8);
    const fc = wire.failureConf(4, STATUS.E_AG_HOST_ERROR1, 'down');
    assert.equal(fc.readUInt32BE(12), 60);
    const back = decodeFrame(fc, { direction: DIRECTION.HOST_TO_ROUTER, profile });
    assert.deepEqual([back.status, back.statusName], [STATUS.E_AG_HOST_ERROR1, 'E_AG_HOST_ERROR1']);
    // A number the profile moved away is no longer what it was: 7 is CLOSE_REQ now, not HEARTBEAT_REQ.
    const seven = Buffer.from('000000040000000700000009', 'hex');
    assert.equal(decodeFrame(seven, { profile }).type, 'CLOSE_REQ');
    assert.equal(encode({ type: 'HEARTBEAT_CONF', invokeId: 1 }, { profile }).readUInt32BE(4), 6);
  });

  it('two profiles in one process: each reader and serializer keeps its own, the default stays ours', () => {
    const ged125 = createProfile(SWAPPED);
    const ours = [];
    const theirs = [];
    const readerOf = (profile, out) => new MessageReader({
      profile, onMessage: (m) => out.push(m.type), onError: (e) => out.push(e.reason),
    });
    const a = readerOf(undefined, ours);
    const b = readerOf(ged125, theirs);
    const both = Buffer.concat([serialize.heartbeatReq(1), serializerFor(ged125).heartbeatReq(2)]);
    a.push(both);
    b.push(both);
    // Type 7 then type 5 on the wire: ours reads a heartbeat (7) then a CLOSE_REQ (5);
    // GED-125's reads a CLOSE_REQ (its 7) then a heartbeat (its 5).
    assert.deepEqual(ours, ['HEARTBEAT_REQ', 'CLOSE_REQ']);
    assert.deepEqual(theirs, ['CLOSE_REQ', 'HEARTBEAT_REQ']);
    assert.equal(serialize.heartbeatReq(1).readUInt32BE(4), 7);
    assert.equal(serializerFor(DEFAULT_PROFILE), serialize);
    assert.equal(createProfile({ versions: [2] }), DEFAULT_PROFILE, 'a protocol section that moves no number is the default');
  });

  it('refuses unknown names, numbers out of range and numbers used twice', () => {
    const E = PROFILE_ERROR_CODES;
    assert.throws(() => resolveProfile({ messageTypes: { HEARTBEAT: 5 } }), { name: 'ProfileError', code: E.UNKNOWN_NAME, message: /unknown name HEARTBEAT/ });
    assert.throws(() => resolveProfile({ messageTypes: { QUERY_REQ: -1 } }), { code: E.OUT_OF_RANGE, message: /QUERY_REQ must be an integer/ });
    assert.throws(() => resolveProfile({ messageTypes: { HEARTBEAT_REQ: 5 } }),
      { code: E.DUPLICATE, message: /HEARTBEAT_REQ and CLOSE_REQ are both 5|CLOSE_REQ and HEARTBEAT_REQ are both 5/ });
    assert.throws(() => resolveProfile({ status: { E_AG_HOST_ERROR2: 6 } }), { code: E.DUPLICATE, message: /both 6/ });
  });
});
