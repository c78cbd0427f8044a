'use strict';

// Every number below is from docs/protocol.md; reverse maps are derived, never typed twice.

/** Message types (docs/protocol.md section 3). 5..8 follow the [decision] numbering: 5/6 CLOSE, 7/8 HEARTBEAT. */
const MESSAGE_TYPES = Object.freeze({
  FAILURE_CONF: 1,
  FAILURE_EVENT: 2,
  OPEN_REQ: 3,
  OPEN_CONF: 4,
  CLOSE_REQ: 5,
  CLOSE_CONF: 6,
  HEARTBEAT_REQ: 7,
  HEARTBEAT_CONF: 8,
  QUERY_REQ: 9,
  QUERY_RESP: 10,
  PARAM_REQ: 11,
  PARAM_CONF: 12,
});

/**
 * Which side sends each type. A type arriving from the wrong side is rejected as unknown.
 * @type {ReadonlySet<number>}
 */
const ROUTER_TO_HOST = Object.freeze(new Set([
  MESSAGE_TYPES.OPEN_REQ, MESSAGE_TYPES.CLOSE_REQ, MESSAGE_TYPES.HEARTBEAT_REQ,
  MESSAGE_TYPES.QUERY_REQ, MESSAGE_TYPES.PARAM_REQ,
]));
/** @type {ReadonlySet<number>} */
const HOST_TO_ROUTER = Object.freeze(new Set(
  Object.values(MESSAGE_TYPES).filter((id) => !ROUTER_TO_HOST.has(id)),
));

/** Tagged fields (docs/protocol.md section 4). */
const TAGS = Object.freeze({
  ERROR: 1,
  CONFIG: 2,
  SUBTYPE: 3,
  CED: 4,
  CLID: 5,
  CDPD: 6,
  ROUTING_CLIENT: 7,
  DN: 8,
  VAR1: 9,
  VAR2: 10,
  VAR3: 11,
  VAR4: 12,
  VAR5: 13,
  VAR6: 14,
  VAR7: 15,
  VAR8: 16,
  VAR9: 17,
  VAR10: 18,
  SESSION_KEY: 19,
  ECC: 20,
  ECC_ARRAY: 21,
});

/** Status codes (docs/protocol.md section 5). */
const STATUS = Object.freeze({
  E_AG_NO_ERROR: 0,
  E_AG_INVALID_VERSION: 1,
  E_AG_SESSION_ACTIVE: 2,
  E_AG_HOST_OFFLINE: 3,
  E_AG_INVALID_MESSAGE: 4,
  E_AG_SESSION_INACTIVE: 5,
  E_AG_HOST_ERROR1: 6,
  E_AG_HOST_ERROR2: 7,
  E_AG_INVALID_KEY: 8,
});

/** QUERY_REQ flag bits (docs/protocol.md section 3); other bits are ignored. */
const QUERY_FLAGS = Object.freeze({
  DUPLICATE: 0x01,
  NO_SCRIPT_REPLY: 0x02,
});

/**
 * @template {string} N
 * @param {Readonly<Record<N, number>>} table
 * @returns {Readonly<Record<number, N | undefined>>} number -> name; a number the table does not hold gives undefined
 */
function invert(table) {
  /** @type {Record<number, N>} */
  const out = Object.create(null);
  for (const [name, id] of Object.entries(table)) out[id] = /** @type {N} */ (name);
  return Object.freeze(out);
}

const MESSAGE_NAMES = invert(MESSAGE_TYPES);
const STATUS_NAMES = invert(STATUS);

/** The message header: UINT32 MessageLength (body bytes only) then UINT32 MessageType. */
const HEADER_LENGTH = 8;
/** [decision] MessageLength above this is fatal the moment the header arrives. */
const DEFAULT_MAX_MESSAGE_LENGTH = 8 * 1024;
/** The length of a tag is one byte. */
const MAX_TAG_DATA = 255;
/** [decision] ECC limits taken from the CTI convention. */
const MAX_ECC_NAME = 32;
const MAX_ECC_VALUE = 210;
/** The router's default RequestTimeout (docs/protocol.md): a reply later than this is too late. */
const ROUTER_REQUEST_TIMEOUT_MS = 300;
const VAR_COUNT = 10;
/** OPEN_REQ IdleTimeout values taken as they are, in ms (1 s to 24 h; 0 and others: the host's default). */
const IDLE_TIMEOUT_RANGE = Object.freeze({ min: 1000, max: 24 * 60 * 60 * 1000 });
/** A peripheral variable's number as text, 1..VAR_COUNT, for regular expressions: "(1|2|...|10)". */
const VAR_NUMBER = `(${Array.from({ length: VAR_COUNT }, (_, i) => i + 1).join('|')})`;
const MAX_UINT32 = 0xffffffff;

/** @typedef {keyof typeof MESSAGE_TYPES} MessageTypeName 'QUERY_REQ', 'QUERY_RESP', ... */
/** @typedef {keyof typeof STATUS} StatusName 'E_AG_NO_ERROR', 'E_AG_HOST_ERROR1', ... */

module.exports = {
  MESSAGE_TYPES, MESSAGE_NAMES, ROUTER_TO_HOST, HOST_TO_ROUTER, TAGS, STATUS, STATUS_NAMES, QUERY_FLAGS, HEADER_LENGTH,
  DEFAULT_MAX_MESSAGE_LENGTH, MAX_TAG_DATA, MAX_ECC_NAME, MAX_ECC_VALUE, VAR_COUNT, VAR_NUMBER, IDLE_TIMEOUT_RANGE, ROUTER_REQUEST_TIMEOUT_MS, MAX_UINT32,
};
