'use strict';

// The session (docs/protocol.md sections 3, 5 and 6): OPEN, CLOSE, PARAM, the state a request
// arrives in, and the IdleTimeout the router asks for.

const { serialize, STATUS, STATUS_NAMES } = require('../../../lib/protocol');
const { brief, check } = require('../context');

const INACTIVE = 'QUERY_REQ or PARAM_REQ before OPEN_REQ or after CLOSE_REQ';

/** A FAILURE_CONF with this status, to this request; else the case fails saying what came. */
async function failureWith(t, peer, invokeId, status) {
  const reply = await t.reply(peer, invokeId);
  check(reply.type === 'FAILURE_CONF' && reply.status === status, `got ${brief(reply)}, not FAILURE_CONF ${STATUS_NAMES[status]}`, { marks: [reply] });
  return reply;
}

const paramReq = (invokeId) => serialize.paramReq({ invokeId, paramId: 1, paramValue: 0 });

/** An open session that has been closed (CLOSE_REQ answered). */
async function closedSession(t) {
  const peer = await t.session();
  const id = t.id();
  peer.send(serialize.closeReq(id));
  const conf = await t.reply(peer, id);
  check(conf.type === 'CLOSE_CONF', `CLOSE_REQ got ${brief(conf)}`);
  return peer;
}

module.exports = [
  {
    id: 'ged145/open/1',
    title: 'OPEN_REQ is answered OPEN_CONF with its InvokeID',
    level: 'MUST',
    section: '6',
    requirement: 'The router connects and sends OPEN_REQ; the host answers OPEN_CONF, or FAILURE_CONF with a status.',
    expected: 'OPEN_CONF with the InvokeID of the OPEN_REQ, once',
    async run(t) {
      const peer = await t.connect();
      const id = t.id();
      peer.send(t.openReq({ invokeId: id }));
      const reply = await t.reply(peer, id, 'OPEN_REQ');
      check(reply.type === 'OPEN_CONF', `OPEN_REQ got ${brief(reply)}`);
      return brief(reply);
    },
  },
  {
    id: 'ged145/open/2',
    title: 'a second OPEN_REQ on an open session is refused, and the session carries on',
    level: 'SHOULD',
    section: '5',
    requirement: 'OPEN_REQ on a connection whose session is open',
    expected: 'FAILURE_CONF E_AG_SESSION_ACTIVE; a query after it is answered',
    async run(t) {
      const peer = await t.session();
      const id = t.id();
      peer.send(t.openReq({ invokeId: id }));
      const reply = await failureWith(t, peer, id, STATUS.E_AG_SESSION_ACTIVE);
      const after = await t.ask(peer, {}, 'a query after the second OPEN_REQ');
      return `${brief(reply)}; then ${brief(after)}`;
    },
  },
  {
    id: 'ged145/open/3',
    title: 'OPEN_REQ with an unsupported version is refused, and an older version is accepted on the same connection',
    level: 'SHOULD',
    section: '5',
    requirement: 'OPEN_REQ asks for a version not in `protocol.versions` (the router then tries an older one, on the same connection)',
    expected: 'FAILURE_CONF E_AG_INVALID_VERSION to version 4000000000, then OPEN_CONF to the usual version',
    async run(t) {
      const peer = await t.connect();
      const id = t.id();
      peer.send(t.openReq({ invokeId: id, version: 4_000_000_000 }));
      const refusal = await failureWith(t, peer, id, STATUS.E_AG_INVALID_VERSION);
      check(!peer.closed, 'the host closed the connection after refusing the version');
      await t.open(peer);
      return `${brief(refusal)}, then OPEN_CONF to version ${t.options.version}`;
    },
  },
  {
    id: 'ged145/open/4',
    title: 'a QUERY_REQ before OPEN_REQ is refused as out of session',
    level: 'SHOULD',
    section: '5',
    requirement: INACTIVE,
    expected: 'FAILURE_CONF E_AG_SESSION_INACTIVE',
    async run(t) {
      const peer = await t.connect();
      const q = t.queryReq();
      peer.send(q);
      return brief(await failureWith(t, peer, q.readUInt32BE(8), STATUS.E_AG_SESSION_INACTIVE));
    },
  },
  {
    id: 'ged145/open/5',
    title: 'a PARAM_REQ before OPEN_REQ is refused as out of session',
    level: 'SHOULD',
    section: '5',
    requirement: INACTIVE,
    expected: 'FAILURE_CONF E_AG_SESSION_INACTIVE',
    async run(t) {
      const peer = await t.connect();
      const id = t.id();
      peer.send(paramReq(id));
      return brief(await failureWith(t, peer, id, STATUS.E_AG_SESSION_INACTIVE));
    },
  },
  {
    id: 'ged145/open/6',
    title: "the host closes a connection silent for OPEN_REQ's IdleTimeout",
    level: 'MUST',
    section: '6',
    requirement: 'nothing from the router for that long and the host closes the connection.',
    expected: 'with IdleTimeout 1000 ms and nothing sent: open at 800 ms, closed by the host within 3 s',
    timeoutMs: 6000,
    async run(t) {
      const peer = await t.connect();
      await t.open(peer, { idleTimeoutMs: 1000 });
      peer.expectClose();
      const start = peer.now();
      await peer.settle(800);
      check(!peer.closed, `closed ${Math.round(peer.closedAt - start)} ms after OPEN_CONF, before the IdleTimeout of 1000 ms`);
      check(await peer.waitClosed(2200), 'still open 3 s after the last message, with an IdleTimeout of 1000 ms');
      return `closed by the host ${Math.round(peer.closedAt - start)} ms after the last message`;
    },
  },
  {
    id: 'ged145/open/7',
    title: 'heartbeats keep a session with a short IdleTimeout open',
    level: 'MUST',
    section: '6',
    requirement: 'OPEN_REQ.IdleTimeout is four times the router\'s heartbeat interval',
    expected: 'with IdleTimeout 1000 ms and a heartbeat every 250 ms, open after 2.5 s and every heartbeat answered',
    timeoutMs: 8000,
    async run(t) {
      const peer = await t.connect();
      await t.open(peer, { idleTimeoutMs: 1000 });
      const ids = [];
      const beat = () => {
        const id = t.id();
        peer.send(serialize.heartbeatReq(id));
        return id;
      };
      for (let i = 0; i < 10 && !peer.closed; i++) {
        ids.push(beat());
        await peer.settle(250);
      }
      check(!peer.closed, `the host closed the connection after ${ids.length} heartbeats, 250 ms apart`, { cause: 'closes the connection' });
      // The router keeps beating while it waits, so a host that is only slow to answer is not closed for idleness here.
      const answered = () => ids.every((id) => peer.messages.some((m) => m.invokeId === id));
      for (let i = 0; i < 12 && !answered() && !peer.closed; i++) {
        beat();
        await peer.settle(250);
      }
      await t.replies(peer, ids, 250);
      return `${ids.length} heartbeats over 2.5 s: each answered, the session open`;
    },
  },
  {
    id: 'ged145/close/1',
    title: 'CLOSE_REQ is answered CLOSE_CONF with its InvokeID',
    level: 'MUST',
    section: '3',
    requirement: 'Both numberings are answered with type + 1 and the same InvokeID',
    expected: 'CLOSE_CONF with the InvokeID of the CLOSE_REQ, once',
    async run(t) {
      const peer = await t.session();
      const id = t.id();
      peer.send(serialize.closeReq(id));
      const reply = await t.reply(peer, id);
      check(reply.type === 'CLOSE_CONF', `CLOSE_REQ got ${brief(reply)}`);
      return brief(reply);
    },
  },
  {
    id: 'ged145/close/2',
    title: 'queries in flight when CLOSE_REQ arrives are each answered',
    level: 'MUST',
    section: '6',
    requirement: 'Every request gets exactly one reply: never none, never two.',
    expected: 'a reply to each of 20 queries sent just before CLOSE_REQ, and CLOSE_CONF',
    timeoutMs: 8000,
    async run(t) {
      const peer = await t.session();
      const frames = Array.from({ length: 20 }, () => t.queryReq());
      const closeId = t.id();
      frames.push(serialize.closeReq(closeId));
      peer.send(Buffer.concat(frames));
      await t.replies(peer, frames.map((f) => f.readUInt32BE(8)));
      return '20 queries and CLOSE_REQ in one write: each answered once';
    },
  },
  {
    id: 'ged145/close/3',
    title: 'CLOSE_CONF comes after the queries in flight, and the host leaves the close to the router',
    level: 'SHOULD',
    section: '3',
    requirement: 'it answers CLOSE_CONF once the queries in flight are answered and leaves the close to the router.',
    expected: 'CLOSE_CONF after the replies to the 20 queries before it; the connection open 500 ms later',
    timeoutMs: 8000,
    async run(t) {
      const peer = await t.session();
      const frames = Array.from({ length: 20 }, () => t.queryReq());
      const closeId = t.id();
      frames.push(serialize.closeReq(closeId));
      peer.send(Buffer.concat(frames));
      const ids = frames.map((f) => f.readUInt32BE(8));
      await t.replies(peer, ids);
      const order = peer.messages.map((m) => m.invokeId);
      const early = ids.slice(0, -1).filter((id) => order.indexOf(id) > order.indexOf(closeId)).length;
      check(early === 0, `CLOSE_CONF came before the replies to ${early} of the 20 queries`);
      await peer.settle(500);
      check(!peer.closed, 'the host closed the connection after CLOSE_CONF');
      return 'CLOSE_CONF after the 20 replies; the connection left open';
    },
  },
  {
    id: 'ged145/close/4',
    title: 'a QUERY_REQ after CLOSE_REQ is refused as out of session',
    level: 'SHOULD',
    section: '5',
    requirement: INACTIVE,
    expected: 'FAILURE_CONF E_AG_SESSION_INACTIVE',
    async run(t) {
      const peer = await closedSession(t);
      const q = t.queryReq();
      peer.send(q);
      return brief(await failureWith(t, peer, q.readUInt32BE(8), STATUS.E_AG_SESSION_INACTIVE));
    },
  },
  {
    id: 'ged145/close/5',
    title: 'a PARAM_REQ after CLOSE_REQ is refused as out of session',
    level: 'SHOULD',
    section: '5',
    requirement: INACTIVE,
    expected: 'FAILURE_CONF E_AG_SESSION_INACTIVE',
    async run(t) {
      const peer = await closedSession(t);
      const id = t.id();
      peer.send(paramReq(id));
      return brief(await failureWith(t, peer, id, STATUS.E_AG_SESSION_INACTIVE));
    },
  },
  {
    id: 'ged145/param/1',
    title: 'PARAM_REQ in a session is answered PARAM_CONF',
    level: 'MUST',
    section: '3',
    requirement: 'PARAM_REQ gets PARAM_CONF.',
    expected: 'PARAM_CONF with the InvokeID of the PARAM_REQ, once',
    async run(t) {
      const peer = await t.session();
      const id = t.id();
      peer.send(paramReq(id));
      const reply = await t.reply(peer, id);
      check(reply.type === 'PARAM_CONF', `PARAM_REQ got ${brief(reply)}`);
      return brief(reply);
    },
  },
];
