'use strict';

// Decoder: (MessageType, body) -> message. The byte layouts are declared with binary-parser so
// that each reads like its table in docs/protocol.md; what binary-parser does not check (tag overrun,
// a dangling byte, ECC layout) is validated here and turned into a ProtocolError (a reject).

const { Parser } = require('binary-parser');
const {
  MESSAGE_TYPES: T, MESSAGE_NAMES, TAGS, ROUTER_TO_HOST, HOST_TO_ROUTER, HEADER_LENGTH,
} = require('./constants');
const { ProtocolError, ERROR_CODES } = require('./errors');
const { DIRECTION, DIRECTIONS } = require('./direction');
const { DEFAULT_PROFILE } = require('./profile');
const {
  FailureConf, FailureEvent, OpenReq, InvokeOnly, QueryReq, QueryResp, ParamReq, setOwn,
} = require('./messages');

/** @typedef {import('./messages').Message} Message */
/** @typedef {import('./direction').Direction} Direction */
/** @typedef {import('./profile').Profile} Profile */
/**
 * What the decoder needs of a session cipher (des.createSessionCipher gives all of it).
 * @typedef {Pick<import('./des').SessionCipher, 'decryptField' | 'onDropped' | 'onDecrypted'>} FieldDecrypter
 */
/** @typedef {{ tag: number, length: number, offset: number }} RawTag a tag located in a body, its data not yet read */
/**
 * A fixed part as binary-parser reads it: the words of the type's layout, and its tags.
 * @typedef {object} Fields
 * @property {number} invokeId
 * @property {number} status
 * @property {number} version
 * @property {number} idleTimeoutMs
 * @property {number} encryption
 * @property {number} routerCallDay
 * @property {number} routerCallKey
 * @property {number} flags
 * @property {number} paramId
 * @property {number} paramValue
 * @property {RawTag[]} tags
 */
/** @typedef {QueryReq | QueryResp} CallMessage */
/** @typedef {Buffer & { latin1Slice(start: number, end: number): string }} Latin1Buffer Node's fast latin1 reader, which @types/node leaves out */

// docs/protocol.md section 4: UCHAR tag, UCHAR length, length bytes of data, back to back.
// The data is located by offset, not sliced: text is read straight out of the body.
const tag = new Parser().uint8('tag').uint8('length').saveOffset('offset').skip('length');

/** @type {(fixed: Parser, withTags: boolean) => { fixedSize: number, parser: Parser }} */
function layout(fixed, withTags) {
  const fixedSize = fixed.sizeOf();
  const parser = withTags ? fixed.array('tags', { type: tag, readUntil: 'eof' }) : fixed;
  parser.compile();
  return { fixedSize, parser };
}

// Fixed parts, one per table row of docs/protocol.md section 3.
/** @type {Record<number, { fixedSize: number, parser: Parser } | undefined>} */
const LAYOUTS = {
  [T.FAILURE_CONF]: layout(new Parser().uint32be('invokeId').uint32be('status'), true),
  [T.FAILURE_EVENT]: layout(new Parser().uint32be('status'), true),
  [T.OPEN_REQ]: layout(new Parser()
    .uint32be('invokeId').uint32be('version').uint32be('idleTimeoutMs').uint32be('encryption'), true),
  [T.OPEN_CONF]: layout(new Parser().uint32be('invokeId'), false),
  [T.CLOSE_REQ]: layout(new Parser().uint32be('invokeId'), false), // a trailing Status word is ignored
  [T.CLOSE_CONF]: layout(new Parser().uint32be('invokeId'), false),
  [T.HEARTBEAT_REQ]: layout(new Parser().uint32be('invokeId'), false),
  [T.HEARTBEAT_CONF]: layout(new Parser().uint32be('invokeId'), false),
  [T.QUERY_REQ]: layout(new Parser()
    .uint32be('invokeId').uint32be('routerCallDay').uint32be('routerCallKey').uint8('flags'), true),
  [T.QUERY_RESP]: layout(new Parser().uint32be('invokeId').uint32be('status'), true),
  [T.PARAM_REQ]: layout(new Parser().uint32be('invokeId').uint32be('paramId').uint32be('paramValue'), false),
  [T.PARAM_CONF]: layout(new Parser().uint32be('invokeId'), false),
};

/**
 * Trailing NULs are stripped: scalar tags arrive with or without one (docs/protocol.md section 4).
 * @type {(body: Buffer, t: { offset: number, length: number }) => string}
 */
function text(body, t) {
  const start = t.offset;
  let end = start + t.length;
  while (end > start && body[end - 1] === 0) end--;
  return /** @type {Latin1Buffer} */ (body).latin1Slice(start, end);
}

/** @type {(body: Buffer, t: RawTag) => Buffer} */
const dataOf = (body, t) => body.subarray(t.offset, t.offset + t.length);

/** @type {(code: import('./errors').ProtocolErrorCode, message: string, typeId: number, invokeId: number | undefined) => ProtocolError} */
function reject(code, message, typeId, invokeId) {
  return new ProtocolError(code, message, { typeId, invokeId });
}

/**
 * @param {number} typeId a type with a layout
 * @param {Buffer} body
 * @returns {Fields}
 */
function parseFixed(typeId, body) {
  const { fixedSize, parser } = /** @type {{ fixedSize: number, parser: Parser }} */ (LAYOUTS[typeId]);
  const invokeId = typeId !== T.FAILURE_EVENT && body.length >= 4 ? body.readUInt32BE(0) : undefined;
  if (body.length < fixedSize) {
    throw reject(ERROR_CODES.TRUNCATED,
      `${MESSAGE_NAMES[typeId]} body is ${body.length} bytes, its fixed part needs ${fixedSize}`, typeId, invokeId);
  }
  /** @type {Fields} */
  let fields;
  try {
    fields = parser.parse(body);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    // The fixed part is there, so binary-parser can only run out of bytes inside the tag list:
    // a lone byte where a tag header (tag + length) should be.
    throw reject(ERROR_CODES.DANGLING_BYTE, `${MESSAGE_NAMES[typeId]} ends with a partial tag header`, typeId, invokeId);
  }
  const tags = fields.tags;
  if (tags !== undefined) {
    for (let i = 0; i < tags.length; i++) {
      const t = tags[i];
      if (t.offset + t.length > body.length) {
        throw reject(ERROR_CODES.TAG_OVERRUN,
          `tag ${t.tag} says ${t.length} bytes but only ${body.length - t.offset} remain`, typeId, invokeId);
      }
    }
  }
  return fields;
}


/**
 * ECC: one or more `name NUL value NUL` pairs in one tag (into null: only checked).
 * @type {(body: Buffer, t: RawTag, into: Record<string, string> | null, typeId: number, invokeId: number, padded: boolean) => void}
 */
function readEcc(body, t, into, typeId, invokeId, padded) {
  const end = t.offset + t.length;
  let pos = t.offset;
  if (pos === end) throw reject(ERROR_CODES.BAD_ECC, 'ECC tag is empty', typeId, invokeId);
  while (pos < end) {
    if (padded && pos > t.offset && nulIn(body, pos, end) === pos && allNul(body, pos, end)) break; // encryption padding
    const nameEnd = nulIn(body, pos, end);
    const valueEnd = nameEnd < 0 ? -1 : nulIn(body, nameEnd + 1, end);
    if (valueEnd < 0 || nameEnd === pos) {
      throw reject(ERROR_CODES.BAD_ECC, 'ECC tag is not a list of name NUL value NUL pairs', typeId, invokeId);
    }
    if (into !== null) {
      const latin1 = /** @type {Latin1Buffer} */ (body);
      setOwn(into, latin1.latin1Slice(pos, nameEnd), latin1.latin1Slice(nameEnd + 1, valueEnd));
    }
    pos = valueEnd + 1;
  }
}

/** @type {(body: Buffer, from: number, end: number) => boolean} */
function allNul(body, from, end) {
  for (let i = from; i < end; i++) if (body[i] !== 0) return false;
  return true;
}

/**
 * Index of the first NUL in body[from, end), or -1.
 * @type {(body: Buffer, from: number, end: number) => number}
 */
function nulIn(body, from, end) {
  for (let i = from; i < end; i++) if (body[i] === 0) return i;
  return -1;
}

/**
 * ECC_ARRAY: UCHAR index, name NUL, value NUL.
 * @type {(body: Buffer, t: RawTag, typeId: number, invokeId: number, padded: boolean) => import('./messages').EccArrayElement}
 */
function readEccArray(body, t, typeId, invokeId, padded) {
  const start = t.offset;
  const end = start + t.length;
  const nameEnd = t.length > 1 ? nulIn(body, start + 1, end) : -1;
  const valueEnd = nameEnd < 0 ? -1 : nulIn(body, nameEnd + 1, end);
  const tailOk = valueEnd === end - 1 || (padded && valueEnd > 0 && allNul(body, valueEnd, end));
  if (nameEnd <= start + 1 || !tailOk) {
    throw reject(ERROR_CODES.BAD_ECC, 'ECC_ARRAY tag is not index, name NUL, value NUL', typeId, invokeId);
  }
  const latin1 = /** @type {Latin1Buffer} */ (body);
  return { name: latin1.latin1Slice(start + 1, nameEnd), index: body[start], value: latin1.latin1Slice(nameEnd + 1, valueEnd) };
}

/**
 * Fills the call-data tags shared by QUERY_REQ and QUERY_RESP; returns false for tags it does not know.
 * QUERY_RESP has no subtype, clid, routingClient or dn: such tags in one are read into it all the same.
 * @type {(msg: CallMessage, body: Buffer, t: RawTag, typeId: number, padded?: boolean) => boolean}
 */
function readCallTag(msg, body, t, typeId, padded = false) {
  const id = t.tag;
  const m = /** @type {QueryReq} */ (msg);
  if (id >= TAGS.VAR1 && id <= TAGS.VAR10) {
    if (msg.vars === undefined) msg.vars = {};
    /** @type {Record<number, string>} */ (msg.vars)[id - TAGS.VAR1 + 1] = text(body, t);
    return true;
  }
  switch (id) {
    case TAGS.SUBTYPE: m.subtype = text(body, t); return true;
    case TAGS.CED: msg.ced = text(body, t); return true;
    case TAGS.CLID: m.clid = text(body, t); return true;
    case TAGS.CDPD: msg.cdpd = text(body, t); return true;
    case TAGS.ROUTING_CLIENT: m.routingClient = text(body, t); return true;
    case TAGS.DN: m.dn = text(body, t); return true;
    case TAGS.ECC:
      if (msg.ecc === undefined) msg.ecc = {};
      readEcc(body, t, msg.ecc, typeId, msg.invokeId, padded);
      return true;
    case TAGS.ECC_ARRAY:
      if (msg.eccArrays === undefined) msg.eccArrays = [];
      msg.eccArrays.push(readEccArray(body, t, typeId, msg.invokeId, padded));
      return true;
    default:
      return false;
  }
}

/** @type {(msg: CallMessage, body: Buffer, t: RawTag) => void} */
function keepUnknown(msg, body, t) {
  if (msg.unknownTags === undefined) msg.unknownTags = [];
  msg.unknownTags.push({ tag: t.tag, data: dataOf(body, t) });
}

/** @type {(body: Buffer, tags: RawTag[], cipher?: FieldDecrypter) => string | undefined} */
function errorText(body, tags, cipher) {
  for (let i = 0; i < tags.length; i++) {
    if (tags[i].tag !== TAGS.ERROR) continue;
    if (cipher === undefined) return text(body, tags[i]);
    const plain = decryptTag(cipher, body, tags[i]);
    return plain === null ? undefined : text(plain, { offset: 0, length: plain.length });
  }
  return undefined;
}

/**
 * An encrypted session's tag -> its plaintext (padding included), or null: not whole DES
 * blocks, or not ASCII once decrypted (an ECC_ARRAY's index byte aside). Such a field is ignored.
 * The cipher's onDropped and onDecrypted hear of each: a router with another key shows as fields
 * that all fail (gateway/session/key-check.js).
 * @type {(cipher: FieldDecrypter, body: Buffer, t: RawTag) => Buffer | null}
 */
function decryptTag(cipher, body, t) {
  const plain = decryptedAscii(cipher, body, t);
  if (plain !== null && cipher.onDecrypted) cipher.onDecrypted(t.tag, plain);
  return plain;
}

/** @type {(cipher: FieldDecrypter, body: Buffer, t: RawTag) => Buffer | null} */
function decryptedAscii(cipher, body, t) {
  const plain = cipher.decryptField(dataOf(body, t));
  if (plain === null) {
    if (cipher.onDropped) cipher.onDropped(t.tag, 'not a whole number of DES blocks');
    return null;
  }
  for (let i = t.tag === TAGS.ECC_ARRAY ? 1 : 0; i < plain.length; i++) {
    if (plain[i] > 0x7f) {
      if (cipher.onDropped) cipher.onDropped(t.tag, 'not ASCII after decryption');
      return null;
    }
  }
  return plain;
}

/**
 * Whether a decrypted ECC or ECC_ARRAY tag is name NUL value NUL. Under another key a block
 * passes the ASCII test once in 256; the noise it holds is ignored as a field that does not
 * decrypt is (docs/protocol.md, encryption), never a reason to refuse the whole query: with the
 * right key that cannot be told apart from a garbled field, and with the wrong one the query
 * must get E_AG_INVALID_KEY, as its other fields tell (key-check.js), not E_AG_INVALID_MESSAGE.
 * @type {(plain: Buffer, clear: RawTag, typeId: number, invokeId: number) => boolean}
 */
function eccWellFormed(plain, clear, typeId, invokeId) {
  try {
    if (clear.tag === TAGS.ECC) readEcc(plain, clear, null, typeId, invokeId, true);
    else if (clear.tag === TAGS.ECC_ARRAY) readEccArray(plain, clear, typeId, invokeId, true);
    return true;
  } catch (err) {
    if (/** @type {ProtocolError} */ (err).code === ERROR_CODES.BAD_ECC) return false;
    throw err;
  }
}

/** @type {(msg: CallMessage, body: Buffer, tags: RawTag[], typeId: number, cipher: FieldDecrypter | undefined) => void} */
function readCallTags(msg, body, tags, typeId, cipher) {
  for (const t of tags) {
    if (cipher === undefined) {
      if (!readCallTag(msg, body, t, typeId)) keepUnknown(msg, body, t);
      continue;
    }
    const plain = decryptedAscii(cipher, body, t);
    if (plain === null) continue;
    const clear = { tag: t.tag, offset: 0, length: plain.length };
    if ((t.tag === TAGS.ECC || t.tag === TAGS.ECC_ARRAY) && !eccWellFormed(plain, clear, typeId, msg.invokeId)) {
      if (cipher.onDropped) cipher.onDropped(t.tag, 'not name NUL value NUL after decryption');
      continue;
    }
    if (cipher.onDecrypted) cipher.onDecrypted(t.tag, plain);
    if (!readCallTag(msg, plain, clear, typeId, true)) keepUnknown(msg, plain, clear);
  }
}

/** @type {(typeId: number, f: Fields, body: Buffer, cipher: FieldDecrypter | undefined, profile: Profile) => Message} */
function build(typeId, f, body, cipher, profile) {
  switch (typeId) {
    case T.FAILURE_CONF: return new FailureConf(f.invokeId, profile.statusFromWire(f.status), errorText(body, f.tags, cipher));
    case T.FAILURE_EVENT: return new FailureEvent(profile.statusFromWire(f.status), errorText(body, f.tags));
    case T.OPEN_REQ: {
      /** @type {string | undefined} */
      let config;
      /** @type {Buffer | undefined} */
      let sessionKey;
      /** @type {import('./messages').UnknownTag[] | undefined} */
      let unknownTags;
      for (const t of f.tags) {
        if (t.tag === TAGS.CONFIG) config = text(body, t);
        else if (t.tag === TAGS.SESSION_KEY) sessionKey = dataOf(body, t);
        else (unknownTags || (unknownTags = [])).push({ tag: t.tag, data: dataOf(body, t) });
      }
      return new OpenReq(f.invokeId, f.version, f.idleTimeoutMs, f.encryption, config, sessionKey, unknownTags);
    }
    case T.QUERY_REQ: {
      const msg = new QueryReq(f.invokeId, f.routerCallDay, f.routerCallKey, f.flags);
      readCallTags(msg, body, f.tags, typeId, cipher);
      return msg;
    }
    case T.QUERY_RESP: {
      const msg = new QueryResp(f.invokeId, profile.statusFromWire(f.status));
      readCallTags(msg, body, f.tags, typeId, cipher);
      return msg;
    }
    case T.PARAM_REQ: return new ParamReq(f.invokeId, f.paramId, f.paramValue);
    default: return new InvokeOnly(typeId, /** @type {import('./messages').InvokeOnlyType} */ (MESSAGE_NAMES[typeId]), f.invokeId);
  }
}

/**
 * decode(typeId, body, direction, cipher, profile) -> message. `direction`: 'router-to-host' (a host
 * reading: only router->host types are legal) or 'host-to-router'. `cipher` (des.createSessionCipher:
 * decryptField(Buffer) -> Buffer|null, onDropped(tag, why), onDecrypted(tag, plaintext)) is given on an encrypted session: the
 * tags of QUERY_REQ, QUERY_RESP and FAILURE_CONF are then decrypted first (docs/protocol.md,
 * encryption). `profile`: the wire numbering (profile.js; ours by default). Throws a ProtocolError
 * (a reject) for any frame whose body is wrong; the framing itself is intact, so the stream carries on.
 * @param {number} wireTypeId the MessageType from the header, as on the wire
 * @param {Buffer} body the frame's body, without the header
 * @param {Direction} [direction]
 * @param {FieldDecrypter} [cipher]
 * @param {Profile} [profile]
 * @returns {Message}
 */
function decode(wireTypeId, body, direction = DIRECTION.ROUTER_TO_HOST, cipher = undefined, profile = DEFAULT_PROFILE) {
  const typeId = profile.typeFromWire(wireTypeId); // the profile's numbering on the wire (profile.js)
  const fromRouter = direction === DIRECTION.ROUTER_TO_HOST;
  if (!fromRouter && direction !== DIRECTION.HOST_TO_ROUTER) throw new TypeError(`direction must be ${DIRECTIONS.join(' or ')}`);
  const legal = fromRouter ? ROUTER_TO_HOST : HOST_TO_ROUTER;
  if (!legal.has(typeId)) {
    const invokeId = body.length >= 4 ? body.readUInt32BE(0) : undefined;
    if (LAYOUTS[typeId] === undefined) {
      throw reject(ERROR_CODES.UNKNOWN_TYPE, `unknown MessageType ${wireTypeId}`, wireTypeId, invokeId);
    }
    throw reject(ERROR_CODES.WRONG_DIRECTION, `${MESSAGE_NAMES[typeId]} is never sent by the ${fromRouter ? 'router' : 'host'}`, typeId, invokeId);
  }
  return build(typeId, parseFixed(typeId, body), body, cipher, profile);
}

/**
 * One whole frame (8-byte header and body) -> message, for tools and tests that hold a frame in a
 * buffer: decodeFrame(buf, {direction, cipher, profile}). Throws a ProtocolError when the header does not
 * match the buffer or the body is wrong.
 * @param {Buffer} buf
 * @param {{ direction?: Direction, cipher?: FieldDecrypter, profile?: Profile }} [options]
 * @returns {Message}
 */
function decodeFrame(buf, { direction = DIRECTION.ROUTER_TO_HOST, cipher, profile } = {}) {
  if (buf.length < HEADER_LENGTH) throw new ProtocolError(ERROR_CODES.TRUNCATED, `a frame is at least ${HEADER_LENGTH} bytes, got ${buf.length}`);
  const length = buf.readUInt32BE(0);
  if (buf.length !== HEADER_LENGTH + length) {
    throw new ProtocolError(ERROR_CODES.TRUNCATED, `MessageLength ${length} does not match the ${buf.length - HEADER_LENGTH} body bytes given`);
  }
  return decode(buf.readUInt32BE(4), buf.subarray(HEADER_LENGTH), direction, cipher, profile);
}

/**
 * Bytes of the fixed part of a message type (before its tags), or undefined for an unknown type.
 * @param {number} wireTypeId
 * @param {Profile} [profile]
 * @returns {number | undefined}
 */
function fixedLength(wireTypeId, profile = DEFAULT_PROFILE) {
  const l = LAYOUTS[profile.typeFromWire(wireTypeId)];
  return l === undefined ? undefined : l.fixedSize;
}

module.exports = { decode, decodeFrame, fixedLength };
