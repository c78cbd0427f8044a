'use strict';

// Connections (docs/protocol.md sections 1 and 7): two router sides at once, reconnects, and
// the optional protection, DES field encryption and TLS.

const crypto = require('node:crypto');
const { STATUS, des } = require('../../../lib/protocol');
const { brief, check } = require('../context');

module.exports = [
  {
    id: 'ged145/transport/1',
    title: 'sides A and B at once: each connection gets the replies to its own queries',
    level: 'MUST',
    section: '1',
    requirement: 'A duplexed router has two sides, A and B, each with its own connection, so a host normally serves two sessions at once.',
    expected: 'two sessions open together; 50 queries on each, with the same InvokeIDs, each answered once on its own connection',
    timeoutMs: 10_000,
    async run(t) {
      const a = await t.session('side A');
      const b = await t.session('side B');
      const ids = Array.from({ length: 50 }, () => t.id());
      for (const id of ids) {
        a.send(t.queryReq({ invokeId: id, routingClient: 'SIDE_A' }));
        b.send(t.queryReq({ invokeId: id, routingClient: 'SIDE_B' }));
      }
      await t.replies(a, ids);
      await t.replies(b, ids);
      return 'side A and side B: 50 replies each, one per query';
    },
  },
  {
    id: 'ged145/transport/2',
    title: 'after the host closes a connection, the router reconnects at once and is served',
    level: 'MUST',
    section: '1',
    requirement: 'When the host closes, the router reconnects at once',
    expected: 'a new connection right after the host closed the last one (IdleTimeout 1000 ms): OPEN_CONF and a reply',
    timeoutMs: 8000,
    async run(t) {
      const first = await t.connect('first');
      await t.open(first, { idleTimeoutMs: 1000 });
      first.expectClose();
      const hostClosed = await first.waitClosed(3000);
      if (!hostClosed) first.close();
      const again = await t.session('reconnected');
      const r = await t.ask(again, {}, 'the query on the new connection');
      const before = hostClosed ? 'the host closed the first connection' : 'the host did not close the first connection (closed by the kit)';
      return `${before}; reconnected: ${brief(r)}`;
    },
  },
  {
    id: 'ged145/transport/3',
    title: 'a router that drops the connection with queries in flight is served on its next connection',
    level: 'MUST',
    section: '1',
    requirement: 'Either end may close.',
    expected: 'a new session answers a query after the last one was reset with 50 queries in flight',
    async run(t) {
      const first = await t.session('dropped');
      const frames = Array.from({ length: 50 }, () => t.queryReq());
      first.send(Buffer.concat(frames));
      first.closedByUs = true;
      first.socket.resetAndDestroy();
      await first.settle(300);
      const next = await t.session('next');
      const r = await t.ask(next, {}, 'the query on the next connection');
      return `next session: ${brief(r)}`;
    },
  },
  {
    id: 'ged145/des/1',
    title: 'a DES-encrypted session: OPEN with the session key, a query and its reply with encrypted tags',
    level: 'MUST',
    section: '7',
    requirement: 'From then on every tagged field of QUERY_REQ and QUERY_RESP is NUL-padded to a multiple of 8 bytes and DES-encrypted with K',
    needs: 'desKey',
    expected: 'OPEN_CONF to Encryption 1; a reply to an encrypted query whose every tag decrypts to ASCII under K',
    async run(t) {
      const peer = await t.connect();
      const { sealed, cipher } = t.sessionKey();
      await t.open(peer, { encryption: 1, sessionKey: sealed });
      const dropped = [];
      peer.setCipher({ ...cipher, onDropped: (tag, why) => dropped.push(`tag ${tag}: ${why}`) });
      const r = await t.ask(peer, { cipher }, 'the encrypted query');
      check(dropped.length === 0, `the reply's tags do not decrypt under the session key: ${dropped.join('; ')}`);
      check(peer.errors.length === 0, `the reply does not decode once decrypted: ${peer.errors.map((e) => e.reason).join(', ')}`);
      return `${brief(r)}${r.vars ? `, ${Object.keys(r.vars).length} VARs decrypted` : ''}`;
    },
  },
  {
    id: 'ged145/des/2',
    title: 'a SESSION_KEY whose halves differ is refused E_AG_INVALID_KEY',
    level: 'MUST',
    section: '7',
    requirement: 'The host decrypts it and refuses the session (E_AG_INVALID_KEY) when the halves differ.',
    needs: 'desKey',
    expected: 'FAILURE_CONF E_AG_INVALID_KEY to OPEN_REQ with a SESSION_KEY that is K1||K2 under the private key',
    async run(t) {
      const peer = await t.connect();
      const id = t.id();
      const sealed = des.desEncrypt(t.options.desKey, crypto.randomBytes(16));
      peer.send(t.openReq({ invokeId: id, encryption: 1, sessionKey: sealed }));
      const r = await t.reply(peer, id, 'OPEN_REQ');
      check(r.type === 'FAILURE_CONF' && r.status === STATUS.E_AG_INVALID_KEY, `got ${brief(r)}`, { marks: [r] });
      return brief(r);
    },
  },
  {
    id: 'ged145/tls/1',
    title: 'a session over TLS: the certificate verifies, OPEN and a query are answered',
    level: 'MUST',
    section: '1',
    requirement: 'Optional protection: DES field encryption (section 7) or TLS.',
    needs: 'tls',
    expected: 'a TLS handshake verified against the given CA; OPEN_CONF and a reply',
    async run(t) {
      const peer = await t.session();
      const r = await t.ask(peer, {}, 'the query over TLS');
      const protocol = peer.socket.getProtocol ? peer.socket.getProtocol() : 'TLS';
      return `${protocol}, certificate verified; ${brief(r)}`;
    },
  },
];
