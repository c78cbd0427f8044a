'use strict';

// A router that numbers heartbeat and close as GED-125 does, met with configuration alone: the
// gateway (a real process with a `protocol` section), the router simulator and ged145 decode
// (--protocol), and the Wireshark dissector (its preferences) all read the same bytes right.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { once } = require('node:events');
const { execFileSync } = require('node:child_process');
const { spawnCli, runCli } = require('../helpers/spawn');
const { startRestSim } = require('../../rest-sim/server');
const { tmpDir } = require('../helpers/tmp');
const { loadConfig } = require('../../gateway/config');

const PROTOCOL = {
  versions: [2],
  messageTypes: {
    HEARTBEAT_REQ: 5, HEARTBEAT_CONF: 6, CLOSE_REQ: 7, CLOSE_CONF: 8,
  },
};
const frame = (type, words) => {
  const b = Buffer.alloc(8 + 4 * words.length);
  b.writeUInt32BE(4 * words.length, 0);
  b.writeUInt32BE(type, 4);
  words.forEach((v, i) => b.writeUInt32BE(v, 8 + 4 * i));
  return b;
};

describe('protocol compatibility profile, end to end', function () {
  this.timeout(30_000);
  let sim;
  let gw;
  let port;
  let file;
  before(async () => {
    sim = await startRestSim({ port: 0 });
    file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ backend: { url: sim.url }, protocol: PROTOCOL }));
    gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json']);
    ({ port } = await gw.ready());
  });
  after(async () => {
    gw.kill('SIGTERM');
    await gw.exited;
    await sim.close();
  });

  /** OPEN_REQ, then a heartbeat of wire type `type`: [the reply's type, its InvokeID]. */
  async function heartbeatAt(gatewayPort, type) {
    const s = net.connect(gatewayPort, '127.0.0.1');
    await once(s, 'connect');
    const got = [];
    s.on('data', (d) => got.push(d));
    s.write(frame(3, [1, 2, 60000, 0])); // OPEN_REQ
    s.write(frame(type, [9]));
    const until = Date.now() + 3000;
    while (Buffer.concat(got).length < 24 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    s.destroy();
    const bytes = Buffer.concat(got);
    assert.equal(bytes.readUInt32BE(4), 4, 'OPEN_CONF');
    return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
  }

  it('the gateway answers type 5 as a heartbeat (type 6) and stays open', async () => {
    // HEARTBEAT_REQ in this numbering (CLOSE_REQ in ours)
    assert.deepEqual(await heartbeatAt(port, 5), [6, 9], 'type 6 for InvokeID 9');
    const sessionsUrl = gw.err.match(/admin on (http:\/\/[\d.:]+)/)[1];
    assert.ok(sessionsUrl);
  });

  it('the router simulator with --protocol keeps its session through heartbeats; decode and tshark read its capture', async () => {
    const pcap = path.join(tmpDir(), 'profile.pcap');
    const r = await runCli([
      'router', '--port', String(port), '--protocol', file, '--rate', '2', '--duration', '1.5', '--heartbeat-interval', '200', '--json', '--pcap', pcap,
    ]);
    assert.equal(r.code, 0, r.err);
    const s = JSON.parse(r.out);
    assert.equal(s.ok, s.sent);
    assert.ok(s.heartbeats.answered >= 1, JSON.stringify(s.heartbeats));
    assert.deepEqual(s.violations, {});
    const decoded = await runCli(['decode', '--file', pcap, '--protocol', file]);
    assert.match(decoded.out, /router->host {2}HEARTBEAT_REQ id=\d+/);
    assert.match(decoded.out, /host->router {2}HEARTBEAT_CONF id=\d+/);
    const lua = path.join(__dirname, '..', '..', 'tools', 'wireshark', 'ged145.lua');
    const prefs = Object.entries(PROTOCOL.messageTypes).flatMap(([name, n]) => ['-o', `ged145.type_${name.toLowerCase()}:${n}`]);
    const names = execFileSync(
      'tshark',
      ['-X', `lua_script:${lua}`, ...prefs, '-r', pcap, '-Y', 'ged145', '-T', 'fields', '-e', 'ged145.type_name', '-E', 'occurrence=a', '-E', 'aggregator=,'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }
    );
    assert.match(names, /HEARTBEAT_REQ/);
    assert.ok(!/CLOSE_REQ/.test(names.split('\n').slice(0, -3).join('\n')), 'heartbeats are not read as closes');
  });

  it('in one process, a GED-125-numbered gateway and router next to a default pair: each keeps its own numbering', async () => {
    const { startStack } = require('../helpers/stack');
    const { Router } = require('../../simulator/router');
    const { createProfile } = require('../../lib/protocol');
    const stacks = [await startStack({ gateway: { protocol: PROTOCOL } }), await startStack()];
    try {
      const routers = [
        new Router({ targets: [{ host: '127.0.0.1', port: stacks[0].port }], profile: createProfile(PROTOCOL), settings: { heartbeatIntervalMs: 100 } }),
        new Router({ targets: [{ host: '127.0.0.1', port: stacks[1].port }], settings: { heartbeatIntervalMs: 100 } }),
      ];
      await Promise.all(routers.map((r) => r.start()));
      await Promise.all(routers.map((r) => r.runClosedLoop({ window: 4, count: 100 })));
      await new Promise((r) => setTimeout(r, 400)); // heartbeats both ways, each in its own numbering
      for (const r of routers) {
        const s = await r.stop();
        assert.equal(s.ok, 100, JSON.stringify(s));
        assert.deepEqual(s.violations, {});
      }
      // The wire itself, after both gateways started: 5 is a heartbeat to one, 7 to the other (the
      // swap is symmetric, so the reply's type alone cannot tell a heartbeat from a close: the count can).
      const heartbeats = async (st) => Number(/ged145_heartbeats_total (\d+)/.exec(await st.gw.metrics())[1]);
      for (const [st, type, reply] of [[stacks[0], 5, 6], [stacks[1], 7, 8]]) {
        const before = await heartbeats(st);
        assert.deepEqual(await heartbeatAt(st.port, type), [reply, 9]);
        assert.equal(await heartbeats(st), before + 1, `type ${type} answered as a heartbeat`);
      }
      for (const stack of stacks) {
        assert.ok(!stack.log.lines.some((l) => /rejected a frame|closing connection/.test(l.message)), JSON.stringify(stack.log.lines.map((l) => l.message)));
      }
    } finally {
      await Promise.all(stacks.map((st) => st.stop()));
    }
  });

  it('config refuses a profile with a number used twice, naming the keys', () => {
    assert.throws(() => loadConfig({ env: {}, overrides: { 'protocol.messageTypes': { HEARTBEAT_REQ: 5 } } }), /protocol\.messageTypes: HEARTBEAT_REQ and CLOSE_REQ are both 5|CLOSE_REQ and HEARTBEAT_REQ are both 5/);
    assert.throws(() => loadConfig({ env: {}, overrides: { protocol: { messageTypes: { HEARTBEET_REQ: 5 } } } }), /unknown key 'protocol\.messageTypes\.HEARTBEET_REQ'/);
  });
});
