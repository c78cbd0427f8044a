'use strict';

// A backend's answer costs the gateway what a reply can carry, not what the body holds: a real
// gateway process, a real HTTP backend on 127.0.0.1 serving each hostile shape at
// backend.maxResponseBytes (tests/helpers/hostile-shapes.js: error texts outside ASCII, a SOAP
// faultstring, XML of many elements, attributes or levels, JSON deep and wide, many ECC arrays,
// handler answers of 200,000 entries), and two router sessions: one asks for the shape, the other
// sends heartbeats meanwhile. Each hostile query is answered once, with the status its shape
// means, and every heartbeat within 150 ms (the router gives up at 300): a 60 KB error text once
// held every session for over 100 ms per reply, and 64 KB of empty XML elements for tens.

const assert = require('node:assert/strict');
const { performance } = require('node:perf_hooks');
const { serialize } = require('../../../lib/protocol');
const { WireClient, exactlyOnce } = require('../../helpers/wire');
const { tmpDir } = require('../../helpers/tmp');
const { startGateway } = require('../../helpers/real-backend');
const { startHostileBackend, routesOf } = require('../../helpers/hostile-shapes');

/** How long another session's heartbeat may wait while a hostile answer is read. */
const HEARTBEAT_MS = 150;
/** Hostile queries per shape, sent in one write: their replies are built one after another. */
const BURST = 3;
/**
 * A handler's object of 200,000 keys is answered one at a time: V8 lists all its keys before the
 * first can be read (no JavaScript can read an object's keys lazily), 50-100 ms per answer in a
 * gateway process here, a fifth of what the handler spent making it. Past the listing nothing is
 * read beyond one frame's worth (answer/fit.js).
 */
const ONE_AT_A_TIME = new Set(['handler 200,000 ecc', 'handler 200,000 vars keys']);
const HEARTBEAT_EVERY_MS = 5;

describe('hostile answers at backend.maxResponseBytes: another session is answered meanwhile', function () {
  this.timeout(120_000);
  let backend;
  let gw;
  let asker;
  let beater;
  let invokeId = 10;

  before(async () => {
    backend = await startHostileBackend(65_536);
    gw = await startGateway({
      backend: { url: backend.url },
      routes: routesOf(backend.shapes),
      // What is asserted is how long the other session waits; the hostile queries get seconds,
      // so that a busy machine turns none of them into a deadline answer.
      deadlineMs: 5000,
      routerRequestTimeoutMs: 600_000,
      warmup: false,
    }, { dir: tmpDir('ged145-hostile-') });
    asker = await WireClient.connect(gw.port);
    await asker.open();
    beater = await WireClient.connect(gw.port);
    await beater.open();
  });
  after(async () => {
    if (asker) asker.close();
    if (beater) beater.close();
    if (gw) await gw.stop();
    if (backend) await backend.close();
  });

  /** Heartbeats on the second session every few ms until stop(): resolves each one's reply time. */
  function heartbeats() {
    const sentAt = new Map();
    const timer = setInterval(() => {
      const id = ++invokeId;
      sentAt.set(id, performance.now());
      beater.send(serialize.heartbeatReq(id));
    }, HEARTBEAT_EVERY_MS);
    return async () => {
      clearInterval(timer);
      const ids = [...sentAt.keys()];
      const replies = await Promise.all(ids.map((id) => beater.waitFor((m) => m.invokeId === id, 10_000)));
      return replies.map((m) => {
        assert.equal(m.type, 'HEARTBEAT_CONF');
        return m.receivedAt - sentAt.get(m.invokeId);
      });
    };
  }

  async function serve(shape) {
    // Once unmeasured: a handler makes its answer at its first query, as one keeping a table would.
    const first = ++invokeId;
    asker.query(first, { subtype: shape.subtype, ...shape.fields });
    await asker.waitFor((m) => m.invokeId === first, 10_000);

    const stop = heartbeats();
    const ids = Array.from({ length: ONE_AT_A_TIME.has(shape.name) ? 1 : BURST }, () => ++invokeId);
    asker.send(Buffer.concat(ids.map((id) => serialize.queryReq({
      invokeId: id, routerCallDay: 1, routerCallKey: id, subtype: shape.subtype, ...shape.fields,
    }, { nul: true }))));
    const replies = await Promise.all(ids.map((id) => asker.waitFor((m) => m.invokeId === id, 20_000)));
    const waits = await stop();

    for (const r of replies) assert.equal(shape.expect(r), null, shape.name);
    assert.deepEqual(exactlyOnce(asker.messages, ids), { missing: [], duplicated: [] });
    const longest = Math.max(...waits);
    assert.ok(longest < HEARTBEAT_MS, `${shape.name}: a heartbeat waited ${longest.toFixed(0)} ms (of ${waits.length})`);
  }

  for (const name of [
    'plain', 'error text accented', 'error text emoji', 'soap faultstring accented', 'xml many elements', 'xml many attributes',
    'xml deep', 'json deep', 'json wide', 'ecc arrays', 'handler 200,000 ecc', 'handler 200,000 eccArrays', 'handler 200,000 vars keys',
  ]) {
    it(`${name}: answered once as its shape means, every heartbeat within ${HEARTBEAT_MS} ms`, () => serve(backend.shapes.find((s) => s.name === name)));
  }

  it('XML over a budget: one warning for the queries of each budget, naming its setting', () => {
    const log = gw.gw.out + gw.gw.err;
    for (const setting of ['backend.xml.maxElements', 'backend.xml.maxAttributes', 'backend.xml.maxDepth']) {
      const lines = log.split('\n').filter((l) => l.includes(`Raise ${setting} `));
      assert.equal(lines.length, 1, `${setting}:\n${lines.join('\n')}`);
      assert.match(lines[0], /refused unread/);
    }
  });
});
