'use strict';

// Where each case's rule comes from, as docs/protocol.md marks it: Cisco's documents where the
// rule is certain (the document and the part of it that says so), the public host that ran
// against a live router where it is taken from the field, and ged145's own decision where no
// source settles it. A failure quotes its source so a vendor knows how much weight it carries.

/** The marks of docs/protocol.md, as a failure names them. */
const MARKS = Object.freeze({ certain: 'certain', field: 'field', decided: 'decided' });

const GED145 = "Cisco's GED-145 application gateway interface description";
const SCHEMA = 'Cisco ICM Software Database Schema Handbook, Application_Gateway_Connection table';
const FIELD_HOST = 'the public GED-145 host that ran against a live PCCE 11.6 router';
const DECISIONS = "ged145's decision (docs/protocol-decisions.md)";

const certain = (document) => ({ mark: MARKS.certain, document });
const field = (what) => ({ mark: MARKS.field, document: `${FIELD_HOST}: ${what}` });
const decided = (what) => ({ mark: MARKS.decided, document: `${DECISIONS}: ${what}` });

const REASSEMBLY = certain(`${GED145}: an 8-byte header (MessageLength, MessageType) and a body of MessageLength bytes on a TCP byte stream`);
const ONE_REPLY = certain(`${GED145}: every request is answered once, by its reply type or FAILURE_CONF, with its InvokeID`);
const OUT_OF_SESSION = decided('which status refuses a request outside a session');
const INVALID = decided('a frame with a bad body is refused FAILURE_CONF E_AG_INVALID_MESSAGE');
const REQUEST_TIMEOUT = certain(`${SCHEMA}: RequestTimeout, "the CallRouter waits for a response before timing out a request", 300 ms by default`);
const HEARTBEAT_TIMEOUT = certain(`${SCHEMA}: HeartbeatTimeout, "the CallRouter waits for a host to respond to a heartbeat request", 300 ms by default`);
const IDLE = certain(`${SCHEMA}: HeartbeatInterval, "the idle timeout for each host is 4 times this value"`);
const DES = certain(`${GED145}: DES field encryption with a session key sealed under the shared key`);

/** Case id -> {mark, document}. Every case has one (tests/tools/conformance-doc.test.js). */
const SOURCES = Object.freeze({
  'ged145/framing/1': REASSEMBLY,
  'ged145/framing/2': REASSEMBLY,
  'ged145/framing/3': REASSEMBLY,
  'ged145/framing/4': REASSEMBLY,
  'ged145/framing/5': REASSEMBLY,
  'ged145/framing/6': decided('a MessageLength over the limit closes the connection after what was read is answered'),
  'ged145/framing/7': REASSEMBLY,
  'ged145/open/1': certain(`${GED145}: the router sends OPEN_REQ, the host answers OPEN_CONF or FAILURE_CONF`),
  'ged145/open/2': decided('a second OPEN_REQ is refused E_AG_SESSION_ACTIVE'),
  'ged145/open/3': decided('an unsupported version is refused E_AG_INVALID_VERSION on a connection left open'),
  'ged145/open/4': OUT_OF_SESSION,
  'ged145/open/5': OUT_OF_SESSION,
  'ged145/open/6': IDLE,
  'ged145/open/7': IDLE,
  'ged145/close/1': field('CLOSE_REQ is type 5, answered CLOSE_CONF (type 6)'),
  'ged145/close/2': ONE_REPLY,
  'ged145/close/3': decided('CLOSE_CONF after the queries in flight; the router closes'),
  'ged145/close/4': OUT_OF_SESSION,
  'ged145/close/5': OUT_OF_SESSION,
  'ged145/param/1': field('PARAM_REQ is answered PARAM_CONF'),
  'ged145/query/1': ONE_REPLY,
  'ged145/query/2': certain(`${GED145}: the router pipelines without a bound and matches replies by InvokeID, in any order`),
  'ged145/query/3': field('NoScriptReply is flag bit 0x02'),
  'ged145/query/4': ONE_REPLY,
  'ged145/query/5': field('the flag bits; other bits are ignored'),
  'ged145/query/6': field('an unknown tag is kept and ignored'),
  'ged145/query/7': field('scalar tags with or without a trailing NUL'),
  'ged145/query/8': certain(`${GED145}: integers are big-endian (InvokeID is an unsigned 32-bit integer)`),
  'ged145/query/9': field('ECC and ECC_ARRAY layouts'),
  'ged145/query/10': field('a tag\'s one-byte length: up to 255 bytes'),
  'ged145/query/11': ONE_REPLY,
  'ged145/query/12': decided('a backend failure is FAILURE_CONF E_AG_HOST_ERROR1 or E_AG_HOST_ERROR2'),
  'ged145/errors/1': INVALID,
  'ged145/errors/2': INVALID,
  'ged145/errors/3': INVALID,
  'ged145/errors/4': INVALID,
  'ged145/timing/1': REQUEST_TIMEOUT,
  'ged145/timing/2': REQUEST_TIMEOUT,
  'ged145/timing/3': REQUEST_TIMEOUT,
  'ged145/heartbeat/1': HEARTBEAT_TIMEOUT,
  'ged145/heartbeat/2': HEARTBEAT_TIMEOUT,
  'ged145/heartbeat/3': HEARTBEAT_TIMEOUT,
  'ged145/heartbeat/4': decided('heartbeats are answered by the session itself, never behind queries'),
  'ged145/heartbeat/5': HEARTBEAT_TIMEOUT,
  'ged145/transport/1': certain(`${SCHEMA}: one row, one connection, per side of the CallRouter (A and B)`),
  'ged145/transport/2': certain(`${GED145}: either end may close; when the host closes, the router reconnects at once`),
  'ged145/transport/3': certain(`${GED145}: either end may close`),
  'ged145/des/1': DES,
  'ged145/des/2': DES,
  'ged145/tls/1': certain(`${GED145}: optional protection by DES field encryption or TLS`),
});

/** "Cisco ICM ... [certain]": how a failure quotes its source. */
const sourceLine = (s) => `${s.document} [${s.mark}]`;

module.exports = { SOURCES, MARKS, sourceLine };
