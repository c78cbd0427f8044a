'use strict';

// The protocol compatibility profile: wire numbers for message types and status codes.

const assert = require('node:assert/strict');
const {
  serialize, decodeFrame, DIRECTION, STATUS, profile: { setProfile, resolveProfile },
} = require('../../lib/protocol');

// GED-125's numbering of heartbeat and close, and a status moved for good measure.
const SWAPPED = {
  messageTypes: {
    HEARTBEAT_REQ: 5, HEARTBEAT_CONF: 6, CLOSE_REQ: 7, CLOSE_CONF: 8,
  },
  status: { E_AG_HOST_ERROR1: 60 },
};

describe('protocol profile', () => {
  afterEach(() => setProfile());

  it('the default is our numbering', () => {
    assert.equal(serialize.heartbeatReq(1).readUInt32BE(4), 7);
    assert.equal(decodeFrame(serialize.closeReq(2)).type, 'CLOSE_REQ');
  });

  it('encodes and decodes with the profile\'s numbers; the code keeps the names', () => {
    setProfile(SWAPPED);
    const hb = serialize.heartbeatReq(1);
    assert.equal(hb.readUInt32BE(4), 5);
    assert.equal(decodeFrame(hb).type, 'HEARTBEAT_REQ');
    assert.equal(serialize.closeConf(3).readUInt32BE(4), 8);
    const fc = serialize.failureConf(4, STATUS.E_AG_HOST_ERROR1, 'down');
    assert.equal(fc.readUInt32BE(12), 60);
    const back = decodeFrame(fc, { direction: DIRECTION.HOST_TO_ROUTER });
    assert.deepEqual([back.status, back.statusName], [STATUS.E_AG_HOST_ERROR1, 'E_AG_HOST_ERROR1']);
    // A number the profile moved away is no longer what it was: 7 is CLOSE_REQ now, not HEARTBEAT_REQ.
    const seven = Buffer.from('000000040000000700000009', 'hex');
    assert.equal(decodeFrame(seven).type, 'CLOSE_REQ');
  });

  it('refuses unknown names, numbers out of range and numbers used twice', () => {
    assert.throws(() => resolveProfile({ messageTypes: { HEARTBEAT: 5 } }), /unknown name HEARTBEAT/);
    assert.throws(() => resolveProfile({ messageTypes: { QUERY_REQ: -1 } }), /QUERY_REQ must be an integer/);
    assert.throws(() => resolveProfile({ messageTypes: { HEARTBEAT_REQ: 5 } }), /HEARTBEAT_REQ and CLOSE_REQ are both 5|CLOSE_REQ and HEARTBEAT_REQ are both 5/);
    assert.throws(() => resolveProfile({ status: { E_AG_HOST_ERROR2: 6 } }), /both 6/);
  });
});
