'use strict';

// The protocol compatibility profile: the message type numbers and status codes on the wire.
// They are the numbers docs/protocol.md is least sure of (types 5-8 above all), so an operator who
// finds a router numbering them otherwise sets them in config (`protocol`), not in code. The rest
// of the code works with the canonical numbers of constants.js; only the wire boundary (the
// decoder's input, the serializer's output) translates, through the tables below. The default
// profile is the identity. Each reader and serializer is given its profile (DEFAULT_PROFILE unless told).

const { MESSAGE_TYPES, STATUS, MAX_UINT32 } = require('./constants');
const { ProfileError, PROFILE_ERROR_CODES: E } = require('./errors');

/** @typedef {import('./constants').MessageTypeName} MessageTypeName */
/** @typedef {import('./constants').StatusName} StatusName */
/**
 * A wire numbering as an operator writes it (a config's `protocol` section): only the numbers that
 * differ from docs/protocol.md's need be given.
 * @typedef {object} ProfileSpec
 * @property {Partial<Record<MessageTypeName, number>>} [messageTypes] e.g. {"CLOSE_REQ": 7, "HEARTBEAT_REQ": 5}
 * @property {Partial<Record<StatusName, number>>} [status]
 */
/**
 * Every name with its number on the wire.
 * @typedef {{ messageTypes: Record<MessageTypeName, number>, status: Record<StatusName, number> }} ResolvedProfile
 */

/**
 * @template {string} N
 * @param {string[]} names
 * @param {Readonly<Record<N, number>>} canonical
 * @param {Partial<Record<N, number>> | undefined} given
 * @param {string} what
 * @returns {Record<N, number>}
 */
function table(names, canonical, given, what) {
  /** @type {Record<N, number>} */
  const out = { ...canonical };
  for (const [name, value] of Object.entries(given || {})) {
    if (!Object.hasOwn(canonical, name)) throw new ProfileError(E.UNKNOWN_NAME, `${what}: unknown name ${name} (known: ${Object.keys(canonical).join(', ')})`);
    if (!Number.isInteger(value) || value < 0 || value > MAX_UINT32) {
      throw new ProfileError(E.OUT_OF_RANGE, `${what}.${name} must be an integer from 0 to ${MAX_UINT32}`);
    }
    out[/** @type {N} */ (name)] = /** @type {number} */ (value);
  }
  const seen = new Map();
  for (const [name, value] of Object.entries(out)) {
    if (seen.has(value)) throw new ProfileError(E.DUPLICATE, `${what}: ${name} and ${seen.get(value)} are both ${value}; every number must be distinct`);
    seen.set(value, name);
  }
  return out;
}

/**
 * {messageTypes, status} with defaults filled in and checked; throws a ProfileError naming the problem.
 * @param {ProfileSpec} [spec]
 * @returns {ResolvedProfile}
 */
function resolveProfile({ messageTypes, status } = {}) {
  return {
    messageTypes: table(Object.keys(MESSAGE_TYPES), MESSAGE_TYPES, messageTypes, 'protocol.messageTypes'),
    status: table(Object.keys(STATUS), STATUS, status, 'protocol.status'),
  };
}

/**
 * One numbering on the wire, for the readers and serializers given it (serializerFor, MessageReader's
 * `profile`, decodeFrame's): not the process's, so a gateway and a router simulator with different
 * profiles can share a process. `spec`: {messageTypes, status}, checked by resolveProfile.
 */
class Profile {
  /** @param {ProfileSpec} [spec] */
  constructor(spec) {
    const p = resolveProfile(spec || {});
    this.messageTypes = p.messageTypes;
    this.status = p.status;
    /** @type {Readonly<Record<string, number>>} */
    const types = MESSAGE_TYPES;
    /** @type {Readonly<Record<string, number>>} */
    const statuses = STATUS;
    /** True for docs/protocol.md's numbering: nothing to translate. */
    this.identity = Object.entries(p.messageTypes).every(([k, v]) => types[k] === v)
      && Object.entries(p.status).every(([k, v]) => statuses[k] === v);
    /**
     * @param {Readonly<Record<string, number>>} canonical
     * @param {Readonly<Record<string, number>>} wire
     * @returns {[Map<number, number>, Map<number, number>]} canonical -> wire, wire -> canonical
     */
    const maps = (canonical, wire) => {
      const to = new Map();
      const from = new Map();
      for (const [name, number] of Object.entries(canonical)) {
        to.set(number, wire[name]);
        from.set(wire[name], number);
      }
      return [to, from];
    };
    const [typesToWire, typesFromWire] = maps(MESSAGE_TYPES, p.messageTypes);
    const [statusesToWire, statusesFromWire] = maps(STATUS, p.status);
    /** @private */
    this.typesToWire = typesToWire;
    /** @private */
    this.typesFromWire = typesFromWire;
    /** @private */
    this.statusesToWire = statusesToWire;
    /** @private */
    this.statusesFromWire = statusesFromWire;
  }

  /** Wire type number -> canonical. A wire number that this profile moved away from its canonical
   * meaning must not decode as that meaning: it becomes a number past every table.
   * @param {number} n
   * @returns {number}
   */
  typeFromWire(n) {
    if (this.identity) return n;
    const t = this.typesFromWire.get(n);
    if (t !== undefined) return t;
    return this.typesToWire.has(n) ? MAX_UINT32 : n;
  }

  /**
   * Canonical type number -> the wire's; undefined for a number that is no message type.
   * @param {number} n
   * @returns {number | undefined}
   */
  typeToWire(n) {
    return this.identity ? n : this.typesToWire.get(n);
  }

  /**
   * Wire status -> canonical; a number the profile does not move is kept.
   * @param {number} n
   * @returns {number}
   */
  statusFromWire(n) {
    return this.identity ? n : (this.statusesFromWire.get(n) ?? n);
  }

  /**
   * Canonical status -> the wire's; a number the profile does not move is kept.
   * @param {number} n
   * @returns {number}
   */
  statusToWire(n) {
    return this.identity ? n : (this.statusesToWire.get(n) ?? n);
  }
}

/** Our numbering (docs/protocol.md): what every reader and serializer uses unless given another. */
const DEFAULT_PROFILE = new Profile();

/**
 * The profile of a config's `protocol` section (or of nothing: the default).
 * @param {ProfileSpec | null} [spec]
 * @returns {Profile}
 */
function createProfile(spec) {
  if (spec === undefined || spec === null || (spec.messageTypes === undefined && spec.status === undefined)) return DEFAULT_PROFILE;
  return new Profile({ messageTypes: spec.messageTypes, status: spec.status });
}

module.exports = {
  resolveProfile, createProfile, Profile, DEFAULT_PROFILE,
};
