'use strict';

const { STATUS } = require('./constants');

/** Every code of the product's errors starts so (lib/errors.js lists the others). */
const PREFIX = 'ERR_GED145_';

/** 'ERR_GED145_TAG_OVERRUN' -> 'tag_overrun': the short form logs and metric labels use. */
const reasonOf = (code) => code.slice(PREFIX.length).toLowerCase();

/**
 * The one error type of the codec. `code` is stable (programs use it, never the text); `reason`
 * is the same in the short form of logs and of the protocol_errors_total label.
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

  get reason() {
    return reasonOf(this.code);
  }
}

/** Stable codes, one per way a frame can be wrong. */
const ERROR_CODES = Object.freeze({
  FRAME_TOO_LARGE: 'ERR_GED145_FRAME_TOO_LARGE', // fatal: MessageLength over the limit
  UNKNOWN_TYPE: 'ERR_GED145_UNKNOWN_TYPE', // no such MessageType
  WRONG_DIRECTION: 'ERR_GED145_WRONG_DIRECTION', // a type the other side sends
  TRUNCATED: 'ERR_GED145_TRUNCATED', // body shorter than the fixed part
  TAG_OVERRUN: 'ERR_GED145_TAG_OVERRUN', // a tag's length runs past the body
  DANGLING_BYTE: 'ERR_GED145_DANGLING_BYTE', // a lone byte where a tag header should be
  BAD_ECC: 'ERR_GED145_BAD_ECC', // an ECC or ECC_ARRAY tag without its NUL-terminated layout
});

/** Why the encoder refused a message, one code per rule (EncodeError.code). */
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
const KNOWN_ENCODE_CODES = new Set(Object.values(ENCODE_ERROR_CODES));

/** Encoder refusals: thrown before a single byte is written. `code` is one of ENCODE_ERROR_CODES. */
class EncodeError extends TypeError {
  constructor(code, message) {
    if (!KNOWN_ENCODE_CODES.has(code)) throw new TypeError(`unknown EncodeError code ${code}`);
    super(message);
    this.name = 'EncodeError';
    this.code = code;
  }

  get reason() {
    return reasonOf(this.code);
  }
}

module.exports = {
  ProtocolError, EncodeError, ERROR_CODES, ENCODE_ERROR_CODES,
};
