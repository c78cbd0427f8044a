'use strict';

// One error vocabulary: every code the product's errors carry is ERR_GED145_*, no two alike, and
// the short form that logs and metric labels use is its snake_case tail.

const assert = require('node:assert/strict');
const {
  ProtocolError, EncodeError, ERROR_CODES, ENCODE_ERROR_CODES, PROFILE_ERROR_CODES, Framer,
} = require('../../lib/protocol');
const { CODES } = require('../../lib/errors');
const { CODES: BACKEND_CODES } = require('../../gateway/backend/errors');

describe('error codes', () => {
  const all = [
    ...Object.values(CODES), ...Object.values(BACKEND_CODES), ...Object.values(ERROR_CODES), ...Object.values(ENCODE_ERROR_CODES),
    ...Object.values(PROFILE_ERROR_CODES),
  ];

  it('every code is ERR_GED145_ and upper snake case, and no two are the same', () => {
    for (const code of all) assert.match(code, /^ERR_GED145_[A-Z0-9]+(_[A-Z0-9]+)*$/);
    assert.equal(new Set(all).size, all.length);
  });

  it('a codec error gives its reason in the short form: the code\'s tail in snake case', () => {
    const errors = [];
    new Framer({ maxMessageLength: 16, onFrame() {}, onError: (e) => errors.push(e) }).push(Buffer.from('0000001100000009', 'hex'));
    assert.ok(errors[0] instanceof ProtocolError);
    assert.equal(errors[0].code, 'ERR_GED145_FRAME_TOO_LARGE');
    assert.equal(errors[0].reason, 'frame_too_large');
    assert.equal(new EncodeError(ENCODE_ERROR_CODES.BAD_VAR, 'x').reason, 'encode_bad_var');
  });
});
