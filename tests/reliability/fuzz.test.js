'use strict';

// Hostile input through a live gateway process: random and mutated frames (50,000 in npm test,
// 1,000,000 in npm run test:stress) while a canary session's well-formed queries must all be
// answered correctly, exactly once. The gateway must not crash, and its memory must stay bounded.

const assert = require('node:assert/strict');
const net = require('node:net');
const {
  serialize, MessageReader, DIRECTION, STATUS,
} = require('../../lib/protocol');
const { Fuzzer } = require('../helpers/fuzz');
const { spawnCli } = require('../helpers/spawn');
const { readProc } = require('../../runner/monitor');
const { WireClient } = require('../helpers/wire');
const { record } = require('./record');

const STRESS = process.env.GED145_STRESS === '1';
const FRAMES = STRESS ? 1_000_000 : 50_000;

describe(`fuzz: ${FRAMES.toLocaleString('en-US')} random and mutated frames through a live gateway`, function () {
  this.timeout(STRESS ? 600_000 : 120_000);
  let sim;
  let gw;
  let port;
  before(async () => {
    // Both in processes of their own: this process is busy generating frames.
    sim = spawnCli(['rest-sim', '--port', '0', '--ready-json']);
    const { url: simUrl } = await sim.ready();
    gw = spawnCli(['gateway', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', simUrl, '--log-level', 'info', '--ready-json']);
    ({ port } = await gw.ready());
  });
  after(async () => {
    for (const p of [gw, sim]) if (p && p.exitCode === null) p.kill('SIGKILL');
  });

  it('never crashes, stays bounded, and answers every canary query correctly', async () => {
    const fuzzer = new Fuzzer(42);
    let sent = 0;
    let connections = 0;
    const rss = [];
    const sampler = setInterval(() => {
      try { rss.push(readProc(gw.pid).rssKb / 1024); } catch { /* gone */ }
    }, 200);

    // The canary: well-formed queries on its own session, checked one by one.
    const canary = await WireClient.connect(port);
    await canary.open({ config: 'canary' });
    let canaryNext = 10;
    const canaryIds = [];
    let fuzzing = true;
    const canaryLoop = (async () => {
      while (fuzzing) {
        const batch = [];
        for (let i = 0; i < 4; i++) {
          const id = canaryNext++;
          batch.push(id);
          canaryIds.push(id);
          canary.send(Fuzzer.query(id));
        }
        await canary.waitFor((m) => m.invokeId === batch[3], 10_000);
      }
    })();

    // Fuzz connections: batches of 500 frames, each followed by a marker heartbeat whose answer
    // proves the gateway read (and answered) everything before it.
    let marker = 0xf0000000;
    let fuzzReplies = 0;
    let fatalCloses = 0;
    while (sent < FRAMES) {
      const socket = net.connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      socket.on('error', () => {});
      let answered = 0;
      let wake = () => {};
      const reader = new MessageReader({
        direction: DIRECTION.HOST_TO_ROUTER,
        onMessage: (m) => {
          fuzzReplies++;
          if (m.type === 'HEARTBEAT_CONF' && m.invokeId >= 0xf0000000) {
            answered = m.invokeId;
            wake();
          }
        },
        onError: () => { throw new Error('the gateway sent a bad frame'); },
      });
      socket.on('data', (d) => reader.push(d));
      socket.on('close', () => wake());
      await new Promise((r) => { socket.once('connect', r); });
      connections++;
      socket.write(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60_000, config: 'fuzzer' }));
      while (sent < FRAMES && !socket.destroyed) {
        const chunk = [];
        for (let i = 0; i < 500; i++) chunk.push(fuzzer.frame(0));
        const m = ++marker;
        chunk.push(serialize.heartbeatReq(m));
        // Every 25th batch ends with a frame the gateway must refuse by closing the connection.
        const fatal = (m & 0xff) % 25 === 0;
        if (fatal) chunk.push(fuzzer.frame(1));
        socket.write(Buffer.concat(chunk));
        await new Promise((resolve) => {
          const t = setTimeout(resolve, 10_000);
          wake = () => {
            if (answered >= m || socket.destroyed) {
              clearTimeout(t);
              resolve();
            }
          };
          wake();
        });
        if (answered < m) throw new Error(`batch ${m} was never answered (${socket.destroyed ? 'closed' : 'timeout'})`);
        sent += 500;
        if (fatal) {
          await new Promise((resolve) => { if (socket.destroyed) resolve(); else socket.once('close', resolve); });
          fatalCloses++;
        }
      }
      socket.destroy();
    }
    fuzzing = false;
    await canaryLoop;
    clearInterval(sampler);

    assert.equal(gw.exitCode, null, `the gateway died:\n${gw.err}`);
    assert.ok(!/Error: |TypeError|RangeError|Unhandled/.test(gw.err), gw.err.slice(0, 2000));
    // Every canary query answered exactly once, with its own echo, or with the gateway's in-time
    // deadline answer, which a busy machine can make of a pause (most must be echoes).
    const replies = canary.messages.filter((m) => m.invokeId >= 10);
    assert.equal(replies.length, canaryIds.length);
    const echoes = replies.filter((r) => r.status === STATUS.E_AG_NO_ERROR);
    assert.ok(echoes.length > replies.length / 2, `${echoes.length} of ${replies.length} canary queries echoed`);
    for (const r of replies) if (r.status !== STATUS.E_AG_NO_ERROR) assert.equal(r.status, STATUS.E_AG_HOST_ERROR1, JSON.stringify(r));
    for (const r of echoes) {
      assert.deepEqual(r.vars, { 1: `v${r.invokeId}` });
      assert.deepEqual(r.ecc, { 'user.id': String(r.invokeId) });
    }
    assert.equal(new Set(replies.map((r) => r.invokeId)).size, replies.length);
    canary.close();
    const peak = Math.max(...rss);
    assert.ok(peak < 400, `peak RSS ${peak.toFixed(0)} MiB`);
    record('fuzz', {
      frames: sent, fuzzConnections: connections, repliesToFuzz: fuzzReplies, closedByFatalFrame: fatalCloses, canaryQueries: canaryIds.length,
      canaryReplies: replies.length, lost: 0, duplicated: 0, peakRssMb: Math.round(peak),
    });
  });
});
