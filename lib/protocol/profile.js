'use strict';

// The protocol compatibility profile: the message type numbers and status codes on the wire.
// They are the numbers docs/protocol.md is least sure of (types 5-8 above all), so an operator who
// finds a router numbering them otherwise sets them in config (`protocol`), not in code. The rest
// of the code works with the canonical numbers of constants.js; only the wire boundary (the
// decoder's input, the serializer's output) translates, through the tables below. The default
// profile is the identity. One profile per process: a gateway and its router speak one numbering.

const { MESSAGE_TYPES, STATUS, MAX_UINT32 } = require('./constants');

const state = {
  typeToWire: null, typeFromWire: null, statusToWire: null, statusFromWire: null, identity: true,
};

function table(names, canonical, given, what) {
  const out = { ...canonical };
  for (const [name, value] of Object.entries(given || {})) {
    if (!Object.hasOwn(canonical, name)) throw new RangeError(`${what}: unknown name ${name} (known: ${Object.keys(canonical).join(', ')})`);
    if (!Number.isInteger(value) || value < 0 || value > MAX_UINT32) throw new RangeError(`${what}.${name} must be an integer from 0 to ${MAX_UINT32}`);
    out[name] = value;
  }
  const seen = new Map();
  for (const [name, value] of Object.entries(out)) {
    if (seen.has(value)) throw new RangeError(`${what}: ${name} and ${seen.get(value)} are both ${value}; every number must be distinct`);
    seen.set(value, name);
  }
  return out;
}

/** {messageTypes, status} with defaults filled in and checked; throws a RangeError naming the problem. */
function resolveProfile({ messageTypes, status } = {}) {
  return {
    messageTypes: table(Object.keys(MESSAGE_TYPES), MESSAGE_TYPES, messageTypes, 'protocol.messageTypes'),
    status: table(Object.keys(STATUS), STATUS, status, 'protocol.status'),
  };
}

/** Makes `profile` (or the default) the numbering of this process's codec. */
function setProfile(profile) {
  const p = resolveProfile(profile || {});
  const maps = (canonical, wire) => {
    const to = new Map();
    const from = new Map();
    for (const [name, number] of Object.entries(canonical)) {
      to.set(number, wire[name]);
      from.set(wire[name], number);
    }
    return [to, from];
  };
  [state.typeToWire, state.typeFromWire] = maps(MESSAGE_TYPES, p.messageTypes);
  [state.statusToWire, state.statusFromWire] = maps(STATUS, p.status);
  state.identity = Object.entries(p.messageTypes).every(([k, v]) => MESSAGE_TYPES[k] === v) && Object.entries(p.status).every(([k, v]) => STATUS[k] === v);
  return p;
}

/** Wire type number -> canonical (an unknown number maps to one no table has). */
const typeFromWire = (n) => (state.identity ? n : (state.typeFromWire.get(n) ?? unknownType(n)));
const typeToWire = (n) => (state.identity ? n : state.typeToWire.get(n));
const statusFromWire = (n) => (state.identity ? n : (state.statusFromWire.get(n) ?? n));
const statusToWire = (n) => (state.identity ? n : (state.statusToWire.get(n) ?? n));

// A wire number that the profile moved away from its canonical meaning must not decode as that
// meaning: it becomes a number past every table.
function unknownType(n) {
  return state.typeToWire.has(n) ? MAX_UINT32 : n;
}

setProfile();

module.exports = { resolveProfile, setProfile, typeFromWire, typeToWire, statusFromWire, statusToWire };
