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

const NO_OPTIONS = Object.freeze({});

function uint32(value, field) {
  if (!Number.isInteger(value) || value < 0 || value > MAX_UINT32) {
    throw new EncodeError(E.OUT_OF_RANGE, `${field} must be an integer from 0 to ${MAX_UINT32}, got ${value}`);
  }
  return value;
}

function asciiText(value, field, notText = NOT_TEXT) {
  if (typeof value !== 'string' || notText.test(value)) throw textError(value, field, notText);
  return value;
}

/** Same check, with the field name built only when it fails (hot path: ECC pairs). */
function eccText(value, prefix, name, notText = NOT_TEXT) {
  if (typeof value !== 'string' || notText.test(value)) throw textError(value, `${prefix}${name}`, notText);
  return value;
}

function textError(value, field, notText) {
  if (typeof value !== 'string') return new EncodeError(E.NOT_TEXT, `${field} must be a string`);
  return new EncodeError(E.NON_ASCII, `${field} must be ${notText === NOT_TEXT ? 'ASCII' : 'Latin-1'} text without NUL`);
}

// vars key ("1".."10") -> [tag, field name]
const VAR_FIELDS = Object.create(null);
for (let n = 1; n <= VAR_COUNT; n++) VAR_FIELDS[n] = [TAGS.VAR1 + n - 1, `vars.${n}`];

function wantsNul(nul, field) {
  return nul === true || (nul !== undefined && nul !== false && nul.includes(field));
}

/**
 * Collects tags as [id, data] with data a latin1 string (ASCII text, or an ECC_ARRAY index byte)
 * or a Buffer; checks the 255-byte limit as each is added. latin1: values (not names) may hold
 * characters U+0080..U+00FF, written as one byte each (answers.charset "latin1", docs/protocol.md).
 */
class TagList {
  constructor({ nul, cipher, latin1 = false } = NO_OPTIONS) {
    this.nul = nul;
    this.notText = latin1 ? NOT_LATIN1_TEXT : NOT_TEXT;
    this.cipher = cipher; // on an encrypted session (des.createSessionCipher): pads and encrypts each tag
    // Plaintext bytes one tag can carry: 255, or 248 once NUL-padded to DES blocks (docs/protocol.md, encryption).
    this.limit = cipher === undefined ? MAX_TAG_DATA : ENCRYPTED_TAG_DATA;
    this.items = [];
    this.size = 0;
  }

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

  scalar(id, value, field) {
    if (value === undefined || value === null) return;
    const data = asciiText(value, field, this.notText);
    this.add(id, wantsNul(this.nul, field) ? `${data}\0` : data, field);
  }

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

  /** Integer-like keys enumerate in ascending order, so VAR1..VAR10 come out in tag order. */
  vars(vars) {
    for (const key in vars) {
      const field = VAR_FIELDS[key];
      if (field === undefined) {
        throw new EncodeError(E.BAD_VAR, `vars key ${key} is not a peripheral variable number 1..${VAR_COUNT}`);
      }
      this.scalar(field[0], vars[key], field[1]);
    }
  }

  /** Name/value pairs are packed several to a tag, as many as fit in one tag (255, or 248 encrypted). */
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

  eccArrayElement(el) {
    const { name, index, value } = el;
    if (!Number.isInteger(index) || index < 0 || index > 255) {
      throw new EncodeError(E.OUT_OF_RANGE, `ECC array index must be 0..255, got ${index}`);
    }
    if (typeof name !== 'string' || name.length === 0) throw new EncodeError(E.BAD_ECC, 'ECC array name is empty');
    const data = `${String.fromCharCode(index)}${eccText(name, 'ecc array name ', name)}\0${eccText(value, 'eccArrays.', name, this.notText)}\0`;
    this.add(TAGS.ECC_ARRAY, data, 'eccArrays');
  }

  raw({ tag, data }) {
    if (!Number.isInteger(tag) || tag < 0 || tag > 255) throw new EncodeError(E.OUT_OF_RANGE, `tag number ${tag}`);
    this.add(tag, Buffer.isBuffer(data) ? data : asciiText(data, `tag ${tag}`), `tag ${tag}`);
  }

  write(buf, offset) {
    const items = this.items;
    for (let i = 0; i < items.length; i += 2) {
      const data = items[i + 1];
      buf[offset] = items[i];
      buf[offset + 1] = data.length;
      offset += 2;
      if (typeof data !== 'string') data.copy(buf, offset);
      else if (data.length > 24) buf.latin1Write(data, offset);
      else for (let j = 0; j < data.length; j++) buf[offset + j] = data.charCodeAt(j); // short: cheaper than a native call
      offset += data.length;
    }
    return offset;
  }
}

/** Allocates header + fixed words (+ flags byte) + tags once, and writes them; p: the profile. */
function frame(p, typeId, words, flags, tags) {
  const fixed = words.length * 4 + (flags === undefined ? 0 : 1);
  const bodyLength = fixed + (tags ? tags.size : 0);
  const buf = Buffer.allocUnsafe(HEADER_LENGTH + bodyLength);
  buf.writeUInt32BE(bodyLength, 0);
  buf.writeUInt32BE(p.typeToWire(typeId), 4); // the profile's numbering on the wire (profile.js)
  let offset = HEADER_LENGTH;
  for (let i = 0; i < words.length; i++, offset += 4) buf.writeUInt32BE(words[i], offset);
  if (flags !== undefined) buf[offset++] = flags;
  if (tags) tags.write(buf, offset);
  return buf;
}

function status(p, value) {
  const s = typeof value === 'string' ? STATUS[value] : value;
  if (s === undefined) throw new EncodeError(E.BAD_STATUS, `unknown status ${value}`);
  return uint32(p.statusToWire(s), 'status');
}

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

const serializers = new WeakMap();

/** The serializer of `profile` (made once per profile). */
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
 */
function encode(msg, { nul, profile } = {}) {
  const serialize = serializerFor(profile);
  const typeId = msg.typeId !== undefined ? msg.typeId : T[msg.type];
  switch (typeId) {
    case T.FAILURE_CONF: return serialize.failureConf(msg.invokeId, msg.status, msg.error, { nul });
    case T.FAILURE_EVENT: return serialize.failureEvent(msg.status, msg.error, { nul });
    case T.OPEN_REQ: return serialize.openReq(msg, { nul });
    case T.OPEN_CONF: return serialize.openConf(msg.invokeId);
    case T.CLOSE_REQ: return serialize.closeReq(msg.invokeId);
    case T.CLOSE_CONF: return serialize.closeConf(msg.invokeId);
    case T.HEARTBEAT_REQ: return serialize.heartbeatReq(msg.invokeId);
    case T.HEARTBEAT_CONF: return serialize.heartbeatConf(msg.invokeId);
    case T.QUERY_REQ: return serialize.queryReq(msg, { nul });
    case T.QUERY_RESP: return serialize.queryResp(msg, { nul });
    case T.PARAM_REQ: return serialize.paramReq(msg);
    case T.PARAM_CONF: return serialize.paramConf(msg.invokeId);
    default: throw new EncodeError(E.UNKNOWN_TYPE, `cannot encode message type ${msg.type || msg.typeId}`);
  }
}

module.exports = { encode, serialize, serializerFor };
