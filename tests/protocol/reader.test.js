'use strict';

// MessageReader.skim: what a host that has closed a session still reads of it, counted by type.

const assert = require('node:assert/strict');
const {
  MessageReader, serialize, serializerFor, createProfile, MESSAGE_TYPES: T,
} = require('../../lib/protocol');

const query = (invokeId) => serialize.queryReq({ invokeId, routerCallDay: 1, routerCallKey: invokeId }, { nul: true });

describe('MessageReader.skim', () => {
  it('counts the frames held while paused, a frame split across chunks, and what follows; decodes none', () => {
    const decoded = [];
    const reader = new MessageReader({ maxMessageLength: 8192, onMessage: (m) => { decoded.push(m.type); reader.pause(); }, onError: assert.fail });
    reader.push(Buffer.concat([query(1), query(2), serialize.heartbeatReq(3)]));
    assert.deepEqual(decoded, ['QUERY_REQ'], 'paused after the first: two frames held');
    const types = [];
    reader.skim((type) => types.push(type));
    const next = Buffer.concat([query(4), serialize.closeReq(5)]);
    reader.push(next.subarray(0, 11));
    reader.push(next.subarray(11));
    assert.deepEqual(types, [T.QUERY_REQ, T.HEARTBEAT_REQ, T.QUERY_REQ, T.CLOSE_REQ]);
    assert.deepEqual(decoded, ['QUERY_REQ']);
    assert.equal(reader.heldBytes, 0);
  });

  it('gives canonical types under a profile that moves them, and stops quietly at a frame over the limit', () => {
    const profile = createProfile({ messageTypes: { HEARTBEAT_REQ: 5, CLOSE_REQ: 7 } });
    const reader = new MessageReader({ profile, maxMessageLength: 64, onMessage: assert.fail, onError: assert.fail });
    const types = [];
    reader.skim((type) => types.push(type));
    const big = Buffer.alloc(8);
    big.writeUInt32BE(100_000, 0);
    big.writeUInt32BE(T.QUERY_REQ, 4);
    reader.push(Buffer.concat([serializerFor(profile).heartbeatReq(1), big, query(2)]));
    assert.deepEqual(types, [T.HEARTBEAT_REQ]);
    assert.ok(reader.failed);
  });
});
