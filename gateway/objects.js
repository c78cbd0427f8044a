'use strict';

// Plain-object facts used wherever JSON from a backend, a config file or a router is read.

// setOwn is the codec's (it builds ECC maps from the wire), which requires nothing outside itself.
const { messages: { setOwn } } = require('../lib/protocol');

/** A plain object: not null, not an array. */
function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

module.exports = { isObject, setOwn };
