'use strict';

// A complete frame with a bad body (docs/protocol.md sections 3 and 5): rejected with
// FAILURE_CONF E_AG_INVALID_MESSAGE for its InvokeID; the framing itself is intact, so the session
// carries on (framing/5 checks that part).

const { serialize, STATUS } = require('../../../lib/protocol');
const { brief, check } = require('../context');

const UNKNOWN_TYPE = 'A type the other side sends (say, a QUERY_RESP from the router) is as unknown as a type with no number, '
  + 'and is answered FAILURE_CONF `E_AG_INVALID_MESSAGE`.';

/** A frame of `type` whose body is InvokeID and `rest`. */
function frame(type, invokeId, rest = Buffer.alloc(0)) {
  const buf = Buffer.alloc(12 + rest.length);
  buf.writeUInt32BE(4 + rest.length, 0);
  buf.writeUInt32BE(type, 4);
  buf.writeUInt32BE(invokeId, 8);
  rest.copy(buf, 12);
  return buf;
}

async function invalid(t, make) {
  const peer = await t.session();
  const id = t.id();
  peer.send(make(id));
  const reply = await t.reply(peer, id);
  check(reply.type === 'FAILURE_CONF' && reply.status === STATUS.E_AG_INVALID_MESSAGE, `got ${brief(reply)}`, { marks: [reply] });
  return brief(reply);
}

module.exports = [
  {
    id: 'ged145/errors/1',
    title: 'an unknown message type is answered FAILURE_CONF E_AG_INVALID_MESSAGE',
    level: 'SHOULD',
    section: '3',
    requirement: UNKNOWN_TYPE,
    expected: 'FAILURE_CONF E_AG_INVALID_MESSAGE with the InvokeID of the frame of type 99',
    async run(t) {
      return invalid(t, (id) => frame(99, id));
    },
  },
  {
    id: 'ged145/errors/2',
    title: 'a type only the host sends, coming from the router, is answered FAILURE_CONF E_AG_INVALID_MESSAGE',
    level: 'SHOULD',
    section: '3',
    requirement: UNKNOWN_TYPE,
    expected: 'FAILURE_CONF E_AG_INVALID_MESSAGE with the InvokeID of the QUERY_RESP',
    async run(t) {
      return invalid(t, (id) => serialize.queryResp({ invokeId: id, status: 0 }));
    },
  },
  {
    id: 'ged145/errors/3',
    title: 'a QUERY_REQ with its fixed part cut short is answered FAILURE_CONF E_AG_INVALID_MESSAGE',
    level: 'SHOULD',
    section: '5',
    requirement: 'a complete frame with a bad body: unknown type, fixed part cut short, a tag running past the body',
    expected: 'FAILURE_CONF E_AG_INVALID_MESSAGE with the InvokeID of the 6-byte QUERY_REQ',
    async run(t) {
      return invalid(t, (id) => frame(9, id, Buffer.from([0, 1])));
    },
  },
  {
    id: 'ged145/errors/4',
    title: 'a QUERY_REQ with a tag that overruns its message is answered FAILURE_CONF E_AG_INVALID_MESSAGE',
    level: 'SHOULD',
    section: '5',
    requirement: 'a complete frame with a bad body: unknown type, fixed part cut short, a tag running past the body',
    expected: 'FAILURE_CONF E_AG_INVALID_MESSAGE with the InvokeID of the query whose SUBTYPE says 200 bytes',
    async run(t) {
      return invalid(t, (id) => {
        const q = t.queryReq({ invokeId: id });
        q[8 + 14] = 200;
        return q;
      });
    },
  },
];
