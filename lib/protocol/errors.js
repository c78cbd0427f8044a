'use strict';

// The codec's error catalogue: every code and error class lib/protocol throws, defined here, so
// that the codec can be published alone (it requires nothing outside lib/protocol, as
// pg-protocol's errors live in pg-protocol). Three tables, one code per rule a class refuses by:
// the decoder's (ProtocolError), the encoder's (EncodeError) and the wire numbering's
// (ProfileError). Every code starts ERR_GED145_, as the product's do (lib/errors.js), and keeps
// its spelling: programs and metric labels use it, never the text. Logs and the
// protocol_errors_total label use its short snake_case form (shortCode: ERR_GED145_TAG_OVERRUN ->
// tag_overrun). tests/architecture/error-catalogue.test.js checks the catalogues.

const { STATUS } = require('./constants');

const PREFIX = 'ERR_GED145_';

/** The decoder's: one code per way a frame can be wrong (ProtocolError). */
const ERROR_CODES = Object.freeze({
  FRAME_TOO_LARGE: 'ERR_GED145_FRAME_TOO_LARGE', // fatal: MessageLength over the limit
  UNKNOWN_TYPE: 'ERR_GED145_UNKNOWN_TYPE', // no such MessageType
  WRONG_DIRECTION: 'ERR_GED145_WRONG_DIRECTION', // a type the other side sends
  TRUNCATED: 'ERR_GED145_TRUNCATED', // body shorter than the fixed part
  TAG_OVERRUN: 'ERR_GED145_TAG_OVERRUN', // a tag's length runs past the body
  DANGLING_BYTE: 'ERR_GED145_DANGLING_BYTE', // a lone byte where a tag header should be
  BAD_ECC: 'ERR_GED145_BAD_ECC', // an ECC or ECC_ARRAY tag without its NUL-terminated layout
});

/** The encoder's: one code per rule it refuses a message by (EncodeError). */
const ENCODE_ERROR_CODES = Object.freeze({
  OUT_OF_RANGE: 'ERR_GED145_ENCODE_OUT_OF_RANGE', // an integer field outside its width
  NOT_TEXT: 'ERR_GED145_ENCODE_NOT_TEXT', // a text field that is not a string
  NON_ASCII: 'ERR_GED145_ENCODE_NON_ASCII', // a text field with NUL or a character past 0x7f
  TAG_TOO_LONG: 'ERR_GED145_ENCODE_TAG_TOO_LONG', // more data than one tag carries (255, or 248 encrypted)
  BAD_VAR: 'ERR_GED145_ENCODE_BAD_VAR', // a vars key that is not 1..10
  BAD_ECC: 'ERR_GED145_ENCODE_BAD_ECC', // an empty ECC name
  BAD_STATUS: 'ERR_GED145_ENCODE_BAD_STATUS', // a status name or number not in the table
  UNKNOWN_TYPE: 'ERR_GED145_ENCODE_UNKNOWN_TYPE', // a message type the encoder does not know
});

/** The wire numbering's: one code per rule a compatibility profile is refused by (ProfileError). */
const PROFILE_ERROR_CODES = Object.freeze({
  UNKNOWN_NAME: 'ERR_GED145_PROFILE_UNKNOWN_NAME', // a message type or status name the codec does not know
  OUT_OF_RANGE: 'ERR_GED145_PROFILE_OUT_OF_RANGE', // a number that is not an integer from 0 to 2^32-1
  DUPLICATE: 'ERR_GED145_PROFILE_DUPLICATE', // two names given one number
});

/** @typedef {typeof ERROR_CODES[keyof typeof ERROR_CODES]} ProtocolErrorCode */
/** @typedef {typeof ENCODE_ERROR_CODES[keyof typeof ENCODE_ERROR_CODES]} EncodeErrorCode */
/** @typedef {typeof PROFILE_ERROR_CODES[keyof typeof PROFILE_ERROR_CODES]} ProfileErrorCode */

/** @type {ReadonlySet<string>} */
const KNOWN_ENCODE_CODES = new Set(Object.values(ENCODE_ERROR_CODES));

/**
 * ERR_GED145_TAG_OVERRUN -> tag_overrun: the short form logs and metric labels use.
 * @param {string} code
 * @returns {string}
 */
const shortCode = (code) => code.slice(PREFIX.length).toLowerCase();

/**
 * The one error type of the decoder. `reason` is the code's short form (logs, the
 * protocol_errors_total label). `fatal` means the byte stream can no longer be trusted: close
 * that connection. Otherwise it is a reject: answer FAILURE_CONF with `status` for `invokeId` (or
 * a FAILURE_EVENT when no InvokeID could be read) and carry on.
 */
class ProtocolError extends Error {
  /**
   * @param {ProtocolErrorCode} code
   * @param {string} message
   * @param {{ fatal?: boolean, invokeId?: number, typeId?: number, status?: number }} [details]
   */
  constructor(code, message, { fatal = false, invokeId, typeId, status = STATUS.E_AG_INVALID_MESSAGE } = {}) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
    this.fatal = fatal;
    /** The frame's InvokeID when one could be read: the FAILURE_CONF answers it. */
    this.invokeId = invokeId;
    /** The frame's MessageType. */
    this.typeId = typeId;
    /** The status of the FAILURE_CONF a reject is answered with (canonical number, constants.STATUS). */
    this.status = status;
  }

  /** @returns {'fatal' | 'reject'} */
  get kind() {
    return this.fatal ? 'fatal' : 'reject';
  }

  /** @returns {string} */
  get reason() {
    return shortCode(this.code);
  }
}

/** Encoder refusals: thrown before a single byte is written. `code` is one of ENCODE_ERROR_CODES. */
class EncodeError extends TypeError {
  /**
   * @param {EncodeErrorCode} code
   * @param {string} message
   */
  constructor(code, message) {
    if (!KNOWN_ENCODE_CODES.has(code)) throw new TypeError(`unknown EncodeError code ${code}`);
    super(message);
    this.name = 'EncodeError';
    this.code = code;
  }

  /** @returns {string} */
  get reason() {
    return shortCode(this.code);
  }
}

/**
 * A wire numbering (a config's `protocol` section, --protocol FILE) that cannot be used; the message
 * names the key ("protocol.messageTypes.QUERY_REQ must be ..."). Whoever reads the numbering from
 * an operator says where it came from: the config loader as a ConfigError, the CLI as a UsageError.
 */
class ProfileError extends Error {
  /**
   * @param {ProfileErrorCode} code
   * @param {string} message
   */
  constructor(code, message) {
    super(message);
    this.name = 'ProfileError';
    this.code = code;
  }

  /** @returns {string} */
  get reason() {
    return shortCode(this.code);
  }
}

module.exports = {
  PREFIX,
  ERROR_CODES,
  ENCODE_ERROR_CODES,
  PROFILE_ERROR_CODES,
  shortCode,
  ProtocolError,
  EncodeError,
  ProfileError,
};
