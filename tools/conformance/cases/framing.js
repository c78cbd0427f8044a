'use strict';

// Framing (docs/protocol.md section 2): a host reads a byte stream, not packets.

const { serialize } = require('../../../lib/protocol');
const { brief, check } = require('../context');

const REASSEMBLY = 'A TCP read can hold part of a message or several, so the reader reassembles: 8 bytes, then MessageLength bytes, again';

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** Writes buf in pieces of `size` bytes with a pause between them, so each arrives in a read of its own. */
async function trickle(peer, buf, size, gapMs) {
  for (let i = 0; i < buf.length; i += size) {
    peer.write(buf.subarray(i, i + size));
    await pause(gapMs);
  }
}

module.exports = [
  {
    id: 'ged145/framing/1',
    title: 'a QUERY_REQ split in two at every byte boundary is answered each time',
    level: 'MUST',
    section: '2',
    requirement: REASSEMBLY,
    expected: 'one reply to each of the queries, whatever the split',
    timeoutMs: 15_000,
    async run(t) {
      const peer = await t.session();
      const ids = [];
      const length = t.queryReq().length;
      for (let k = 1; k < length; k++) {
        const id = t.id();
        ids.push(id);
        const q = t.queryReq({ invokeId: id });
        peer.write(q.subarray(0, k));
        await pause(3);
        peer.write(q.subarray(k));
      }
      await t.replies(peer, ids);
      return `${ids.length} queries, split after byte 1 to ${length - 1}: each answered once`;
    },
  },
  {
    id: 'ged145/framing/2',
    title: 'OPEN_REQ, QUERY_REQ and HEARTBEAT_REQ sent a byte at a time are answered',
    level: 'MUST',
    section: '2',
    requirement: REASSEMBLY,
    expected: 'OPEN_CONF, then one reply to the query and HEARTBEAT_CONF',
    timeoutMs: 15_000,
    async run(t) {
      const peer = await t.connect();
      const openId = t.id();
      const open = t.openReq({ invokeId: openId });
      await trickle(peer, open, 1, 2);
      const conf = await t.reply(peer, openId, 'OPEN_REQ a byte at a time', 2000);
      check(conf.type === 'OPEN_CONF', `OPEN_REQ a byte at a time got ${brief(conf)}`, { marks: [conf] });
      const q = t.queryReq();
      const hb = serialize.heartbeatReq(t.id());
      await trickle(peer, Buffer.concat([q, hb]), 1, 2);
      await t.replies(peer, [q.readUInt32BE(8), hb.readUInt32BE(8)]);
      return `${open.length + q.length + hb.length} writes of one byte: every message answered`;
    },
  },
  {
    id: 'ged145/framing/3',
    title: 'a hundred QUERY_REQs coalesced in one write are each answered once',
    level: 'MUST',
    section: '2',
    requirement: REASSEMBLY,
    expected: '100 replies, one per InvokeID',
    timeoutMs: 10_000,
    async run(t) {
      const peer = await t.session();
      const frames = Array.from({ length: 100 }, () => t.queryReq());
      peer.send(Buffer.concat(frames));
      await t.replies(peer, frames.map((f) => f.readUInt32BE(8)));
      return '100 queries in one write: 100 replies, one each';
    },
  },
  {
    id: 'ged145/framing/4',
    title: 'a hundred QUERY_REQs written in pieces that straddle frames are each answered once',
    level: 'MUST',
    section: '2',
    requirement: REASSEMBLY,
    expected: '100 replies, one per InvokeID',
    timeoutMs: 10_000,
    async run(t) {
      const peer = await t.session();
      const frames = Array.from({ length: 100 }, () => t.queryReq());
      const all = Buffer.concat(frames);
      await trickle(peer, all, 97, 2); // 97 bytes: never a frame boundary for long
      await t.replies(peer, frames.map((f) => f.readUInt32BE(8)));
      return `${all.length} bytes in pieces of 97: 100 replies, one each`;
    },
  },
  {
    id: 'ged145/framing/5',
    title: 'frames with a bad body (unknown type, fixed part cut short, tag overrun) do not break the frames after them',
    level: 'MUST',
    section: '2',
    requirement: REASSEMBLY,
    expected: 'the query sent after the bad frames is answered on the same connection',
    async run(t) {
      const peer = await t.session();
      const unknown = Buffer.from('000000040000006300000000', 'hex'); // type 99
      unknown.writeUInt32BE(t.id(), 8);
      const truncated = Buffer.from('0000000600000009000000000000', 'hex'); // QUERY_REQ, 6 bytes of 13
      truncated.writeUInt32BE(t.id(), 8);
      const q = t.queryReq();
      const overrun = Buffer.from(q); // a tag that says 200 bytes where a few remain
      overrun.writeUInt32BE(t.id(), 8);
      overrun[8 + 14] = 200;
      for (const bad of [unknown, truncated, overrun]) {
        peer.send(bad);
        await pause(20);
      }
      const id = q.readUInt32BE(8);
      peer.send(q);
      const reply = await t.reply(peer, id, 'the query after the bad frames', 2000);
      return `after three bad frames the query got ${brief(reply)}`;
    },
  },
  {
    id: 'ged145/framing/6',
    title: 'an absurd MessageLength closes that connection, after the query read before it is answered',
    level: 'SHOULD',
    section: '2',
    requirement: 'ged145 refuses a MessageLength over `limits.maxMessageLength` (8 KiB by default) the moment the header is in, '
      + 'and closes that connection after answering what it had already read',
    expected: 'a reply to the query, then the host closes the connection; a new connection is served',
    timeoutMs: 10_000,
    async run(t) {
      const peer = await t.session();
      const q = t.queryReq();
      const absurd = Buffer.from('fffffff000000009', 'hex');
      peer.expectClose();
      peer.send(Buffer.concat([q, absurd]));
      const reply = await t.reply(peer, q.readUInt32BE(8), 'the query before the absurd length', 2000);
      check(await peer.waitClosed(3000), 'the connection is still open 3 s after a MessageLength of 4294967280');
      const event = peer.messages.find((m) => m.type === 'FAILURE_EVENT');
      const next = await t.session('after');
      await t.ask(next, {}, 'a query on a new connection after it');
      return `${brief(reply)}, ${event ? `${brief(event)}, ` : ''}then the host closed; a new session is served`;
    },
  },
  {
    id: 'ged145/framing/7',
    title: "the host's MessageLength counts the body only",
    level: 'MUST',
    section: '2',
    requirement: 'length of the body only (the header is not counted)',
    expected: 'OPEN_CONF, a reply to a query and HEARTBEAT_CONF, each a well-formed frame',
    async run(t) {
      const peer = await t.session();
      const q = t.queryReq();
      const hb = serialize.heartbeatReq(t.id());
      peer.send(Buffer.concat([q, hb]));
      await t.replies(peer, [q.readUInt32BE(8), hb.readUInt32BE(8)]);
      check(peer.reader.bufferedBytes === 0, `${peer.reader.bufferedBytes} bytes of an unfinished frame left after the replies`);
      return `${peer.messages.length} frames from the host, each exactly its MessageLength`;
    },
  },
];
