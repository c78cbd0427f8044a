'use strict';

// RouterLink alone (gateway/session/router-link.js) over a real loopback socket, with the session
// played by the test: a chunk of many frames is handled in slices with the event loop turning in
// between, a pause for held requests holds the frames and the FIN behind them, and a FIN is
// reported only once every frame before it has been handed on.

const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { serialize } = require('../../../lib/protocol');
const { RouterLink, SLICE_FRAMES } = require('../../../gateway/session/router-link');

const LIMITS = {
  maxMessageLength: 8192, partialFrameTimeoutMs: 10_000, maxOutboundBytes: 1024 * 1024, closeLingerMs: 500,
};
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** A link on the server end of a loopback connection; `events` records what the session would see. */
async function linkPair(onMessage = () => {}) {
  const server = net.createServer({ allowHalfOpen: true }); // as the gateway listens: a FIN is a half-close
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const client = net.connect(server.address().port, '127.0.0.1');
  const [socket] = await once(server, 'connection');
  server.close();
  const events = [];
  const link = new RouterLink(socket, {
    limits: LIMITS,
    log: quiet,
    meta: {},
    onMessage: (msg) => {
      events.push(msg.invokeId);
      onMessage(msg, link);
    },
    onProtocolError: (err) => events.push(`error ${err.reason}`),
    onPeerEnd: () => events.push('end'),
    onClosed: () => events.push('closed'),
  });
  return { client, link, events };
}
const heartbeats = (n, from = 1) => Buffer.concat(Array.from({ length: n }, (_, i) => serialize.heartbeatReq(from + i)));
const until = async (cond) => { while (!cond()) await new Promise((r) => setTimeout(r, 2)); };

describe('RouterLink (unit, loopback socket)', () => {
  it(`a chunk of many frames is handled ${SLICE_FRAMES} at a time, with the event loop turning between slices`, async () => {
    let turn = 0;
    const turns = [];
    const { client, link, events } = await linkPair(() => turns.push(turn));
    const spin = () => { turn++; if (events.length < 200) setImmediate(spin); };
    client.write(heartbeats(200));
    setImmediate(spin);
    await until(() => events.length === 200);
    assert.deepEqual(events, Array.from({ length: 200 }, (_, i) => i + 1), 'every frame, in order');
    const perTurn = new Map();
    for (const t of turns) perTurn.set(t, (perTurn.get(t) || 0) + 1);
    assert.ok(Math.max(...perTurn.values()) <= SLICE_FRAMES, `at most ${SLICE_FRAMES} frames per turn: ${[...perTurn.values()]}`);
    assert.ok(perTurn.size >= Math.ceil(200 / SLICE_FRAMES), `${perTurn.size} turns`);
    link.destroy('test over');
    client.destroy();
  });

  it('a FIN behind held frames is reported after them, once the session reads again', async () => {
    const { client, link, events } = await linkPair((msg, l) => {
      if (msg.invokeId === 2) l.pauseInput(); // the session holds as much as it may
    });
    client.end(heartbeats(5));
    await until(() => events.length === 2);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(events, [1, 2], 'nothing after the pause, and no end while frames are held');
    assert.ok(link.unreadBytes > 0);
    link.resumeInput();
    await until(() => events.includes('end'));
    assert.deepEqual(events, [1, 2, 3, 4, 5, 'end']);
    link.finish();
    await until(() => events.includes('closed'));
  });

  it('a lone reply is written at once; a bad frame is reported and the frames after it still arrive', async () => {
    const { client, link, events } = await linkPair();
    const bad = Buffer.from('0000000000000063', 'hex'); // MessageLength 0, MessageType 99: an unknown type
    client.write(Buffer.concat([heartbeats(1, 1), bad, heartbeats(1, 2)]));
    await until(() => events.length === 3);
    assert.deepEqual(events, [1, 'error unknown_type', 2]);
    const reply = serialize.heartbeatConf(1);
    link.send(reply);
    const [data] = await once(client, 'data');
    assert.deepEqual(data, reply);
    client.end(); // the router's FIN: reported, and our FIN answers it
    await until(() => events.includes('end'));
    link.finish();
    await until(() => events.includes('closed'));
  });
});
