'use strict';

// A call's place in [0, 1), from the router's RouterCallDay and RouterCallKey: both router sides
// and a query the router asks again give the same call the same place, so whatever picks calls by
// share (the decision log's sample, a canary's percent) picks a call from both sides or neither.
// Each user has its own salt, so that a sample of 10 % and a canary of 10 % are not the same calls.

/** What each user of a call's share salts it with. */
const SALT = Object.freeze({ DECISIONS: 0, CANARY: 1 });

/** The call's share for salt (SALT), a 32-bit integer mix of both keys, as a fraction. */
function callShare(day, key, salt = SALT.DECISIONS) {
  let h = Math.imul(((day >>> 0) ^ 0x9e3779b9 ^ Math.imul(salt, 0x27d4eb2f)) >>> 0, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h ^ (key >>> 0), 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return (h >>> 0) / 2 ** 32;
}

module.exports = { callShare, SALT };
