'use strict';

// Encoder: message -> bytes. Every value is validated and the exact size computed before the one
// allocation; nothing is written until the whole message is known to be encodable.

const {
  MESSAGE_TYPES: T, TAGS, STATUS, HEADER_LENGTH, MAX_TAG_DATA, VAR_COUNT, MAX_UINT32, QUERY_FLAGS,
} = require('./constants');
const { EncodeError, ENCODE_ERROR_CODES: E } = require('./errors');

const { NOT_WIRE_TEXT: NOT_TEXT, NOT_LATIN1_TEXT } = require('./text');
const { MAX_ENCRYPTED_FIELD: ENCRYPTED_TAG_DATA } = require('./des'); // 248: a padded field still fits one length byte

const { DEFAULT_PROFILE } = require('./profile');

/** @typedef {import('./profile').Profile} Profile */
/** @typedef {import('./messages').Status} Status */
/** @typedef {import('./messages').EccArrayElement} EccArrayElement */
/** @typedef {import('./messages').RawTagInput} RawTagInput */
/** @typedef {import('./messages').CallDataInput} CallDataInput */
/** @typedef {import('./messages').QueryReqInput} QueryReqInput */
/** @typedef {import('./messages').QueryRespInput} QueryRespInput */
/** @typedef {import('./messages').OpenReqInput} OpenReqInput */
/** @typedef {import('./messages').ParamReqInput} ParamReqInput */
/** @typedef {import('./messages').EncodableMessage} EncodableMessage */

/**
 * What the encoder needs of a session cipher (des.createSessionCipher gives it).
 * @typedef {Pick<import('./des').SessionCipher, 'encryptField'>} FieldEncrypter
 */
/**
 * How tags are written.
 * @typedef {object} TagOptions
 * @property {boolean | readonly string[]} [nul] true to NUL-terminate every scalar tag (the router's convention),
 *   or the field keys to terminate ('subtype', 'clid', 'vars.1', 'config', 'error', ...); the host sends none (default)
 * @property {FieldEncrypter} [cipher] an encrypted session's cipher: every tag is padded and encrypted
 * @property {boolean} [latin1] values (not names) may hold U+0080..U+00FF, written as one byte each
 */

/**
 * One set of encoders, one per message type, for one wire numbering (serializerFor).
 * @typedef {object} Serializer
 * @property {(invokeId: number, status: Status, error?: string | null, options?: TagOptions) => Buffer} failureConf
 * @property {(status: Status, error?: string | null, options?: TagOptions) => Buffer} failureEvent
 * @property {(msg: OpenReqInput, options?: { nul?: TagOptions['nul'] }) => Buffer} openReq
 * @property {(invokeId: number) => Buffer} openConf
 * @property {(invokeId: number) => Buffer} closeReq
 * @property {(invokeId: number) => Buffer} closeConf
 * @property {(invokeId: number) => Buffer} heartbeatReq
 * @property {(invokeId: number) => Buffer} heartbeatConf
 * @property {(msg: QueryReqInput & CallDataInput, options?: TagOptions) => Buffer} queryReq
 * @property {(msg: QueryRespInput & CallDataInput, options?: TagOptions) => Buffer} queryResp
 * @property {(msg: ParamReqInput) => Buffer} paramReq
 * @property {(invokeId: number) => Buffer} paramConf
 */

/**
 * @typedef {{ type: EncodableMessage['type'], typeId?: number, status: Status, error?: string | null }
 *   & OpenReqInput & QueryReqInput & CallDataInput & ParamReqInput} AnyMessageFields
 */
/** @typedef {Buffer & { latin1Write(text: string, offset: number): number }} Latin1Buffer Node's fast latin1 writer, which @types/node leaves out */

/** @type {TagOptions} */
const NO_OPTIONS = Object.freeze({});

/**
 * @param {number} value checked all the same: untyped callers give anything
 * @param {string} field
 * @returns {number}
 */
function uint32(value, field) {
  if (!Number.isInteger(value) || value < 0 || value > MAX_UINT32) {
    throw new EncodeError(E.OUT_OF_RANGE, `${field} must be an integer from 0 to ${MAX_UINT32}, got ${value}`);
  }
  return value;
}

/** @type {(value: unknown, field: string, notText?: RegExp) => string} */
function asciiText(value, field, notText = NOT_TEXT) {
  if (typeof value !== 'string' || notText.test(value)) throw textError(value, field, notText);
  return value;
}

/**
 * Same check, with the field name built only when it fails (hot path: ECC pairs).
 * @type {(value: unknown, prefix: string, name: string, notText?: RegExp) => string}
 */
function eccText(value, prefix, name, notText = NOT_TEXT) {
  if (typeof value !== 'string' || notText.test(value)) throw textError(value, `${prefix}${name}`, notText);
  return value;
}

/** @type {(value: unknown, field: string, notText: RegExp) => EncodeError} */
function textError(value, field, notText) {
  if (typeof value !== 'string') return new EncodeError(E.NOT_TEXT, `${field} must be a string`);
  return new EncodeError(E.NON_ASCII, `${field} must be ${notText === NOT_TEXT ? 'ASCII' : 'Latin-1'} text without NUL`);
}

// vars key ("1".."10") -> [tag, field name]
/** @type {Record<string, [number, string] | undefined>} */
const VAR_FIELDS = Object.create(null);
for (let n = 1; n <= VAR_COUNT; n++) VAR_FIELDS[n] = [TAGS.VAR1 + n - 1, `vars.${n}`];

/** @type {(nul: TagOptions['nul'], field: string) => boolean} */
function wantsNul(nul, field) {
  return nul === true || (nul !== undefined && nul !== false && nul.includes(field));
}

/**
 * Collects tags as [id, data] with data a latin1 string (ASCII text, or an ECC_ARRAY index byte)
 * or a Buffer; checks the 255-byte limit as each is added. latin1: values (not names) may hold
 * characters U+0080..U+00FF, written as one byte each (answers.charset "latin1", docs/protocol.md).
 */
class TagList {
  /** @param {TagOptions} [options] */
  constructor({ nul, cipher, latin1 = false } = NO_OPTIONS) {
    this.nul = nul;
    this.notText = latin1 ? NOT_LATIN1_TEXT : NOT_TEXT;
    this.cipher = cipher; // on an encrypted session (des.createSessionCipher): pads and encrypts each tag
    // Plaintext bytes one tag can carry: 255, or 248 once NUL-padded to DES blocks (docs/protocol.md, encryption).
    this.limit = cipher === undefined ? MAX_TAG_DATA : ENCRYPTED_TAG_DATA;
    /** @type {(number | string | Buffer)[]} tag id, data, tag id, data, ... */
    this.items = [];
    this.size = 0;
  }

  /**
   * @param {number} id
   * @param {string | Buffer} data
   * @param {string} field
   */
  add(id, data, field) {
    if (this.cipher !== undefined) {
      if (data.length > ENCRYPTED_TAG_DATA) {
        throw new EncodeError(E.TAG_TOO_LONG, `${field} is ${data.length} bytes; an encrypted tag holds at most ${ENCRYPTED_TAG_DATA}`);
      }
      data = this.cipher.encryptField(Buffer.isBuffer(data) ? data : Buffer.from(data, 'latin1'));
    }
    if (data.length > MAX_TAG_DATA) {
      throw new EncodeError(E.TAG_TOO_LONG, `${field} is ${data.length} bytes; a tag holds at most ${MAX_TAG_DATA}`);
    }
    this.items.push(id, data);
    this.size += 2 + data.length;
  }

  /**
   * @param {number} id
   * @param {unknown} value
   * @param {string} field
   */
  scalar(id, value, field) {
    if (value === undefined || value === null) return;
    const data = asciiText(value, field, this.notText);
    this.add(id, wantsNul(this.nul, field) ? `${data}\0` : data, field);
  }

  /** @param {CallDataInput} msg */
  callData(msg) {
    this.scalar(TAGS.SUBTYPE, msg.subtype, 'subtype');
    this.scalar(TAGS.CED, msg.ced, 'ced');
    this.scalar(TAGS.CLID, msg.clid, 'clid');
    this.scalar(TAGS.CDPD, msg.cdpd, 'cdpd');
    this.scalar(TAGS.ROUTING_CLIENT, msg.routingClient, 'routingClient');
    this.scalar(TAGS.DN, msg.dn, 'dn');
    if (msg.vars) this.vars(msg.vars);
    if (msg.ecc) this.ecc(msg.ecc);
    if (msg.eccArrays) for (const el of msg.eccArrays) this.eccArrayElement(el);
    if (msg.unknownTags) for (const t of msg.unknownTags) this.raw(t);
  }

  /**
   * Integer-like keys enumerate in ascending order, so VAR1..VAR10 come out in tag order.
   * @param {Record<string, unknown>} vars
   */
  vars(vars) {
    for (const key in vars) {
      const field = VAR_FIELDS[key];
      if (field === undefined) {
        throw new EncodeError(E.BAD_VAR, `vars key ${key} is not a peripheral variable number 1..${VAR_COUNT}`);
      }
      this.scalar(field[0], vars[key], field[1]);
    }
  }

  /**
   * Name/value pairs are packed several to a tag, as many as fit in one tag (255, or 248 encrypted).
   * @param {Record<string, unknown>} ecc
   */
  ecc(ecc) {
    let packed = '';
    for (const name in ecc) {
      const value = ecc[name];
      if (value === undefined || value === null) continue;
      if (name.length === 0) throw new EncodeError(E.BAD_ECC, 'ECC name is empty');
      const pair = `${eccText(name, 'ecc name ', name)}\0${eccText(value, 'ecc.', name, this.notText)}\0`;
      if (packed.length + pair.length > this.limit && packed.length > 0) {
        this.add(TAGS.ECC, packed, 'ecc');
        packed = '';
      }
      if (pair.length > this.limit) this.add(TAGS.ECC, pair, `ecc pair ${name}`); // throws tag-too-long
      packed += pair;
    }
    if (packed.length > 0) this.add(TAGS.ECC, packed, 'ecc');
  }

  /** @param {EccArrayElement} el */
  eccArrayElement(el) {
    const { name, index, value } = el;
    if (!Number.isInteger(index) || index < 0 || index > 255) {
      throw new EncodeError(E.OUT_OF_RANGE, `ECC array index must be 0..255, got ${index}`);
    }
    if (typeof name !== 'string' || name.length === 0) throw new EncodeError(E.BAD_ECC, 'ECC array name is empty');
    const data = `${String.fromCharCode(index)}${eccText(name, 'ecc array name ', name)}\0${eccText(value, 'eccArrays.', name, this.notText)}\0`;
    this.add(TAGS.ECC_ARRAY, data, 'eccArrays');
  }

  /** @param {RawTagInput} tag */
  raw({ tag, data }) {
    if (!Number.isInteger(tag) || tag < 0 || tag > 255) throw new EncodeError(E.OUT_OF_RANGE, `tag number ${tag}`);
    this.add(tag, Buffer.isBuffer(data) ? data : asciiText(data, `tag ${tag}`), `tag ${tag}`);
  }

  /**
   * @param {Buffer} buf
   * @param {number} offset
   * @returns {number}
   */
  write(buf, offset) {
    const items = this.items;
    for (let i = 0; i < items.length; i += 2) {
      const data = /** @type {string | Buffer} */ (items[i + 1]);
      buf[offset] = /** @type {number} */ (items[i]);
      buf[offset + 1] = data.length;
      offset += 2;
      if (typeof data !== 'string') data.copy(buf, offset);
      else if (data.length > 24) /** @type {Latin1Buffer} */ (buf).latin1Write(data, offset);
      else for (let j = 0; j < data.length; j++) buf[offset + j] = data.charCodeAt(j); // short: cheaper than a native call
      offset += data.length;
    }
    return offset;
  }
}

/**
 * Allocates header + fixed words (+ flags byte) + tags once, and writes them; p: the profile.
 * @type {(p: Profile, typeId: number, words: number[], flags?: number, tags?: TagList) => Buffer}
 */
function frame(p, typeId, words, flags, tags) {
  const fixed = words.length * 4 + (flags === undefined ? 0 : 1);
  const bodyLength = fixed + (tags ? tags.size : 0);
  const buf = Buffer.allocUnsafe(HEADER_LENGTH + bodyLength);
  buf.writeUInt32BE(bodyLength, 0);
  buf.writeUInt32BE(/** @type {number} */ (p.typeToWire(typeId)), 4); // the profile's numbering on the wire (profile.js)
  let offset = HEADER_LENGTH;
  for (let i = 0; i < words.length; i++, offset += 4) buf.writeUInt32BE(words[i], offset);
  if (flags !== undefined) buf[offset++] = flags;
  if (tags) tags.write(buf, offset);
  return buf;
}

/** @type {(p: Profile, value: Status) => number} */
function status(p, value) {
  const s = typeof value === 'string' ? STATUS[value] : value;
  if (s === undefined) throw new EncodeError(E.BAD_STATUS, `unknown status ${value}`);
  return uint32(p.statusToWire(s), 'status');
}

/** @type {(error: string | null | undefined, options: TagOptions | undefined) => TagList} */
function errorTags(error, options) {
  const tags = new TagList(options);
  tags.scalar(TAGS.ERROR, error, 'error');
  return tags;
}


// One function per message type. `options`: {nul, cipher, latin1}. nul: true to NUL-terminate every scalar
// tag (the router's convention), or a list of field keys; the host sends none (default). cipher:
// a session cipher (des.createSessionCipher) on an encrypted session. latin1: values may hold
// Latin-1 characters (TagList). Each set writes the type and
// status numbers of one profile (profile.js): serializerFor(profile); `serialize` is the default's.
/** @type {(p: Profile) => Serializer} */
function makeSerializer(p) {
  return {
    failureConf: (invokeId, st, error, options) => frame(p, T.FAILURE_CONF,
      [uint32(invokeId, 'invokeId'), status(p, st)], undefined, errorTags(error, options)),
    failureEvent: (st, error, options) => frame(p, T.FAILURE_EVENT, [status(p, st)], undefined, errorTags(error, options)),
    openReq({
      invokeId, version, idleTimeoutMs, encryption = 0, config, sessionKey, unknownTags,
    }, { nul } = NO_OPTIONS) {
      const tags = new TagList({ nul });
      tags.scalar(TAGS.CONFIG, config, 'config');
      if (sessionKey !== undefined) tags.add(TAGS.SESSION_KEY, sessionKey, 'sessionKey');
      if (unknownTags) for (const t of unknownTags) tags.raw(t);
      return frame(p, T.OPEN_REQ, [uint32(invokeId, 'invokeId'), uint32(version, 'version'),
        uint32(idleTimeoutMs, 'idleTimeoutMs'), uint32(encryption, 'encryption')], undefined, tags);
    },
    openConf: (invokeId) => frame(p, T.OPEN_CONF, [uint32(invokeId, 'invokeId')]),
    closeReq: (invokeId) => frame(p, T.CLOSE_REQ, [uint32(invokeId, 'invokeId')]),
    closeConf: (invokeId) => frame(p, T.CLOSE_CONF, [uint32(invokeId, 'invokeId')]),
    heartbeatReq: (invokeId) => frame(p, T.HEARTBEAT_REQ, [uint32(invokeId, 'invokeId')]),
    heartbeatConf: (invokeId) => frame(p, T.HEARTBEAT_CONF, [uint32(invokeId, 'invokeId')]),
    queryReq(msg, options) {
      const tags = new TagList(options);
      tags.callData(msg);
      const flags = (msg.duplicate ? QUERY_FLAGS.DUPLICATE : 0) | (msg.noScriptReply ? QUERY_FLAGS.NO_SCRIPT_REPLY : 0);
      return frame(p, T.QUERY_REQ, [uint32(msg.invokeId, 'invokeId'), uint32(msg.routerCallDay, 'routerCallDay'),
        uint32(msg.routerCallKey, 'routerCallKey')], flags, tags);
    },
    queryResp(msg, options) {
      const tags = new TagList(options);
      tags.callData(msg);
      return frame(p, T.QUERY_RESP, [uint32(msg.invokeId, 'invokeId'), status(p, msg.status || 0)], undefined, tags);
    },
    paramReq: ({ invokeId, paramId, paramValue }) => frame(p, T.PARAM_REQ,
      [uint32(invokeId, 'invokeId'), uint32(paramId, 'paramId'), uint32(paramValue, 'paramValue')]),
    paramConf: (invokeId) => frame(p, T.PARAM_CONF, [uint32(invokeId, 'invokeId')]),
  };
}

/** @type {WeakMap<Profile, Readonly<Serializer>>} */
const serializers = new WeakMap();

/**
 * The serializer of `profile` (made once per profile).
 * @param {Profile} [profile]
 * @returns {Readonly<Serializer>}
 */
function serializerFor(profile = DEFAULT_PROFILE) {
  let s = serializers.get(profile);
  if (s === undefined) {
    s = Object.freeze(makeSerializer(profile));
    serializers.set(profile, s);
  }
  return s;
}

const serialize = serializerFor(DEFAULT_PROFILE);

/**
 * encode(message, {nul, profile}) -> Buffer, for any message object with `type` (name) or `typeId`.
 * `nul`: true to NUL-terminate every scalar tag (the router's convention), or a list of field
 * keys ('subtype', 'clid', 'vars.1', 'config', 'error', ...). The host sends no NULs (default).
 * Throws an EncodeError, before a byte is written, for a value the message cannot carry.
 * @param {EncodableMessage} msg
 * @param {{ nul?: TagOptions['nul'], profile?: Profile }} [options]
 * @returns {Buffer}
 */
function encode(msg, { nul, profile } = {}) {
  const serialize = serializerFor(profile);
  // The switch is on typeId, which TypeScript cannot tie to `type`: the fields of every type, each case reads its own.
  const m = /** @type {AnyMessageFields} */ (msg);
  const typeId = m.typeId !== undefined ? m.typeId : T[m.type];
  switch (typeId) {
    case T.FAILURE_CONF: return serialize.failureConf(m.invokeId, m.status, m.error, { nul });
    case T.FAILURE_EVENT: return serialize.failureEvent(m.status, m.error, { nul });
    case T.OPEN_REQ: return serialize.openReq(m, { nul });
    case T.OPEN_CONF: return serialize.openConf(m.invokeId);
    case T.CLOSE_REQ: return serialize.closeReq(m.invokeId);
    case T.CLOSE_CONF: return serialize.closeConf(m.invokeId);
    case T.HEARTBEAT_REQ: return serialize.heartbeatReq(m.invokeId);
    case T.HEARTBEAT_CONF: return serialize.heartbeatConf(m.invokeId);
    case T.QUERY_REQ: return serialize.queryReq(m, { nul });
    case T.QUERY_RESP: return serialize.queryResp(m, { nul });
    case T.PARAM_REQ: return serialize.paramReq(m);
    case T.PARAM_CONF: return serialize.paramConf(m.invokeId);
    default: throw new EncodeError(E.UNKNOWN_TYPE, `cannot encode message type ${m.type || m.typeId}`);
  }
}

module.exports = { encode, serialize, serializerFor };
