// The codec as a TypeScript integrator uses it: `npm run lint` compiles this file against the
// JSDoc of lib/protocol (tsconfig.codec.json), and tests/protocol/types.test.js against the
// declarations `npm pack` ships. Every `@ts-expect-error` line is a mistake the types must refuse:
// if one of them compiles, tsc reports the directive as unused and fails.

import ged145 = require('ged145');
import type { Message, EncodableMessage, ProtocolErrorCode } from 'ged145';

const {
  Framer, MessageReader, decode, decodeFrame, encode, serialize, serializerFor, createProfile,
  ProtocolError, EncodeError, ERROR_CODES, ENCODE_ERROR_CODES, DIRECTION, STATUS, MESSAGE_TYPES, des,
} = ged145;

// A host reading a router: every good frame is a message, every bad one a ProtocolError.
const replies: Buffer[] = [];
const reader = new MessageReader({
  direction: DIRECTION.ROUTER_TO_HOST,
  onMessage(msg, size) {
    const bytes: number = size;
    switch (msg.type) {
      case 'QUERY_REQ': {
        const callKey: number = msg.routerCallKey;
        const dnis: string | undefined = msg.dn;
        const pv1: string | undefined = msg.vars?.['1'];
        const account: string | undefined = msg.ecc?.['user.account'];
        if (msg.duplicate && bytes > 0 && callKey >= 0 && dnis !== pv1 && account !== undefined) break;
        // @ts-expect-error: a QUERY_REQ carries no status
        void msg.status;
        replies.push(serialize.queryResp({ invokeId: msg.invokeId, status: 'E_AG_NO_ERROR', ced: '1234', vars: { 2: 'gold' } }));
        break;
      }
      case 'HEARTBEAT_REQ':
        replies.push(serialize.heartbeatConf(msg.invokeId));
        break;
      case 'OPEN_REQ': {
        const sealed: Buffer | undefined = msg.sessionKey;
        const idle: number = msg.idleTimeoutMs;
        if (sealed !== undefined && idle > 0) replies.push(serialize.openConf(msg.invokeId));
        break;
      }
      case 'FAILURE_EVENT':
        // @ts-expect-error: a FAILURE_EVENT has no InvokeID
        void msg.invokeId;
        break;
      default: {
        const typeId: number = msg.typeId;
        void typeId;
      }
    }
  },
  onError(err) {
    const code: ProtocolErrorCode = err.code;
    const kind: 'fatal' | 'reject' = err.kind;
    // @ts-expect-error: not a code the decoder has
    if (err.code === 'ERR_GED145_TAG_OVERUN') return;
    if (!err.fatal && code !== ERROR_CODES.FRAME_TOO_LARGE && kind === 'reject') {
      if (err.invokeId === undefined) replies.push(serialize.failureEvent(err.status, err.reason));
      else replies.push(serialize.failureConf(err.invokeId, err.status, err.reason));
    }
  },
});
reader.push(Buffer.from('0000000400000007000000010', 'hex'));
if (reader.bufferedBytes > 0 && !reader.failed) reader.pause();
reader.resume();

// @ts-expect-error: a reader needs onMessage
new MessageReader({ onError() {} });
// @ts-expect-error: no such direction
new MessageReader({ direction: 'both-ways', onMessage() {}, onError() {} });
// @ts-expect-error: push takes bytes, not text
reader.push('0000000400000007');

// The framer alone, and decode.
const framer = new Framer({
  maxMessageLength: 4096,
  onFrame(typeId, body) {
    const msg: Message = decode(typeId, body, 'host-to-router');
    if (msg.type === 'QUERY_RESP') {
      const status: number = msg.status;
      void status;
    }
  },
  onError(err) {
    if (err instanceof ProtocolError && err.fatal) framer.pause();
  },
});
framer.push(Buffer.alloc(0));
// @ts-expect-error: a framer needs onFrame
new Framer({ maxMessageLength: 4096 });
// @ts-expect-error: and options at all
new Framer();
// @ts-expect-error: a direction is one of two strings
decode(MESSAGE_TYPES.QUERY_REQ, Buffer.alloc(13), 'router');

// encode: plain objects named by `type`, and decoded messages as they are.
const resp: EncodableMessage = { type: 'QUERY_RESP', invokeId: 1, status: STATUS.E_AG_NO_ERROR, ecc: { 'user.tier': 'gold' } };
encode(resp);
encode({ type: 'FAILURE_CONF', invokeId: 1, status: 'E_AG_HOST_ERROR1', error: 'backend down' }, { nul: ['error'] });
encode(decodeFrame(encode({ type: 'HEARTBEAT_REQ', invokeId: 7 })));
// @ts-expect-error: no such message type
encode({ type: 'QUERY_RESPONSE', invokeId: 1 });
// @ts-expect-error: a status name that is not in the table
encode({ type: 'QUERY_RESP', invokeId: 1, status: 'E_AG_OK' });
// @ts-expect-error: an InvokeID is a number
encode({ type: 'HEARTBEAT_CONF', invokeId: '1' });
// @ts-expect-error: a QUERY_REQ needs its RouterCallDay and RouterCallKey
encode({ type: 'QUERY_REQ', invokeId: 1 });
// @ts-expect-error: there is no PV11
serialize.queryResp({ invokeId: 1, vars: { 11: 'x' } });

// Errors: codes from their own tables.
try {
  encode({ type: 'QUERY_RESP', invokeId: -1 });
} catch (err) {
  if (err instanceof EncodeError && err.code === ENCODE_ERROR_CODES.OUT_OF_RANGE) replies.length = 0;
}
// @ts-expect-error: an EncodeError's code comes from ENCODE_ERROR_CODES
new EncodeError(ERROR_CODES.TRUNCATED, 'no');

// An encrypted session, and another wire numbering.
const cipher = des.createSessionCipher(des.parseKey('0123456789abcdef'), { onDropped: (tag, why) => void [tag, why] });
reader.setCipher(cipher);
serialize.queryResp({ invokeId: 2, ced: '5551234' }, { cipher });
const profile = createProfile({ messageTypes: { CLOSE_REQ: 7, CLOSE_CONF: 8, HEARTBEAT_REQ: 5, HEARTBEAT_CONF: 6 } });
serializerFor(profile).closeConf(3);
// @ts-expect-error: no message type of that name
createProfile({ messageTypes: { HEARTBEAT: 5 } });
// @ts-expect-error: a serializer is frozen per profile
serialize.queryResp = () => Buffer.alloc(0);
