'use strict';

const { STATUS } = require('./constants');

/**
 * The one error type of the codec. `code` is stable (tests and metrics use it, never the text).
 * `fatal` means the byte stream can no longer be trusted: close that connection.
 * Otherwise it is a reject: answer FAILURE_CONF with `status` for `invokeId` (or a FAILURE_EVENT
 * when no InvokeID could be read) and carry on.
 */
class ProtocolError extends Error {
  constructor(code, message, { fatal = false, invokeId, typeId, status = STATUS.E_AG_INVALID_MESSAGE } = {}) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
    this.fatal = fatal;
    this.invokeId = invokeId;
    this.typeId = typeId;
    this.status = status;
  }

  get kind() {
    return this.fatal ? 'fatal' : 'reject';
  }
}

/** Stable codes, one per way a frame can be wrong. */
const ERROR_CODES = Object.freeze({
  FRAME_TOO_LARGE: 'frame-too-large', // fatal: MessageLength over the limit
  UNKNOWN_TYPE: 'unknown-type', // no such MessageType
  WRONG_DIRECTION: 'wrong-direction', // a type the other side sends
  TRUNCATED: 'truncated', // body shorter than the fixed part
  TAG_OVERRUN: 'tag-overrun', // a tag's length runs past the body
  DANGLING_BYTE: 'dangling-byte', // a lone byte where a tag header should be
  BAD_ECC: 'bad-ecc', // an ECC or ECC_ARRAY tag without its NUL-terminated layout
});

/** Why the encoder refused a message, one code per rule (EncodeError.code). */
const ENCODE_ERROR_CODES = Object.freeze({
  OUT_OF_RANGE: 'out-of-range', // an integer field outside its width
  NOT_TEXT: 'not-text', // a text field that is not a string
  NON_ASCII: 'non-ascii', // a text field with NUL or a character past 0x7f
  TAG_TOO_LONG: 'tag-too-long', // more data than one tag carries (255, or 248 encrypted)
  BAD_VAR: 'bad-var', // a vars key that is not 1..10
  BAD_ECC: 'bad-ecc', // an empty ECC name
  BAD_STATUS: 'bad-status', // a status name or number not in the table
  UNKNOWN_TYPE: 'unknown-type', // a message type the encoder does not know
});
const KNOWN_ENCODE_CODES = new Set(Object.values(ENCODE_ERROR_CODES));

/** Encoder refusals: thrown before a single byte is written. `code` is one of ENCODE_ERROR_CODES. */
class EncodeError extends TypeError {
  constructor(code, message) {
    if (!KNOWN_ENCODE_CODES.has(code)) throw new TypeError(`unknown EncodeError code ${code}`);
    super(message);
    this.name = 'EncodeError';
    this.code = code;
  }
}

module.exports = {
  ProtocolError, EncodeError, ERROR_CODES, ENCODE_ERROR_CODES,
};
