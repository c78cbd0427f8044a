'use strict';

// The Wireshark dissector, run by tshark on a capture the router simulator wrote of a real
// session with the gateway: fragmented and coalesced writes and one malformed frame. Every
// message tshark decodes must be what the simulator sent or received.

const { tmpDir } = require('../helpers/tmp');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { MessageReader, DIRECTION } = require('../../lib/protocol');
const { Router } = require('../../simulator/router');
const { startStack } = require('../helpers/stack');

const LUA = path.join(__dirname, '..', '..', 'tools', 'wireshark', 'ged145.lua');

function tshark(args) {
  return execFileSync('tshark', ['-X', `lua_script:${LUA}`, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
}

describe('Wireshark dissector (tshark)', function () {
  this.timeout(60_000);
  let pcap;
  let port;
  const sent = [];
  const received = [];

  before(async function () {
    try {
      execFileSync('tshark', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error('tshark is needed (apt-get install tshark; .ci/run does it)');
    }
    pcap = path.join(tmpDir(), 'session.pcap');
    const stack = await startStack();
    port = stack.port;
    const router = new Router({
      targets: [{ host: '127.0.0.1', port }], pcap, injection: { frag: 3, coalesce: true }, seed: 7, settings: { heartbeatIntervalMs: 150 },
    });
    // Record the simulator's own view of the stream with the codec, beside the capture.
    const wrap = router.pcap.flow.bind(router.pcap);
    router.pcap.flow = (ids) => {
      const flow = wrap(ids);
      const out = new MessageReader({
        direction: DIRECTION.ROUTER_TO_HOST, onMessage: (m) => sent.push(m), onError: (e) => sent.push({ error: e.reason, invokeId: e.invokeId }),
      });
      const inn = new MessageReader({
        direction: DIRECTION.HOST_TO_ROUTER, onMessage: (m) => received.push(m), onError: (e) => received.push({ error: e.code }),
      });
      return { out: (b) => { out.push(b); flow.out(b); }, in: (b) => { inn.push(b); flow.in(b); }, close: flow.close };
    };
    await router.start();
    await router.runClosedLoop({ window: 4, count: 30 });
    router.connections[0].sendInvalid('tag-overrun');
    await router.runClosedLoop({ window: 4, count: 30 });
    await new Promise((r) => setTimeout(r, 400)); // an idle link: heartbeats
    await router.stop();
    await stack.stop();
  });

  function decoded() {
    const out = tshark(['-o', `ged145.port:${port}`, '-r', pcap, '-Y', 'ged145', '-T', 'fields',
      '-e', 'ged145.type', '-e', 'ged145.invoke_id', '-e', 'ged145.subtype', '-e', 'ged145.var1', '-e', 'ged145.status', '-e', '_ws.expert.message',
      '-E', 'occurrence=a', '-E', 'aggregator=|', '-E', 'separator=/t']);
    const all = { types: [], ids: [], subtypes: [], var1: [], statuses: [], experts: [] };
    for (const line of out.trim().split('\n')) {
      const [types, ids, subtypes, var1, statuses, experts] = line.split('\t');
      const list = (s) => (s ? s.split('|') : []);
      all.types.push(...list(types).map(Number));
      all.ids.push(...list(ids).map(Number));
      all.subtypes.push(...list(subtypes));
      all.var1.push(...list(var1));
      all.statuses.push(...list(statuses).map(Number));
      all.experts.push(...list(experts));
    }
    return all;
  }

  const sorted = (xs) => [...xs].sort();

  it('decodes every message of the session through fragmentation and coalescing', () => {
    const t = decoded();
    const expectTypes = [...sent.map((m) => m.typeId || 9), ...received.map((m) => m.typeId)];
    assert.equal(t.types.length, expectTypes.length, `tshark saw ${t.types.length} messages, the simulator ${expectTypes.length}`);
    assert.deepEqual(sorted(t.types), sorted(expectTypes));
    assert.deepEqual(sorted(t.ids), sorted([...sent, ...received].map((m) => m.invokeId)));
    assert.ok(sent.some((m) => m.type === 'HEARTBEAT_REQ'), 'the capture has heartbeats');
  });

  it('shows the same SUBTYPE, VAR1 and Status values the simulator sent and received', () => {
    const t = decoded();
    assert.deepEqual(sorted(t.subtypes), sorted(sent.filter((m) => m.subtype !== undefined).map((m) => m.subtype)));
    const var1 = [...sent, ...received].filter((m) => m.vars && m.vars[1] !== undefined).map((m) => m.vars[1]);
    assert.deepEqual(sorted(t.var1), sorted(var1));
    assert.deepEqual(sorted(t.statuses), sorted(received.filter((m) => m.status !== undefined).map((m) => m.status)));
  });

  it('flags the malformed frame with expert info, and the gateway answered it E_AG_INVALID_MESSAGE', () => {
    const t = decoded();
    assert.deepEqual(t.experts, ['Tag length runs past the end of the body']);
    const bad = sent.find((m) => m.error === 'tag_overrun');
    assert.ok(bad);
    assert.ok(received.some((m) => m.type === 'FAILURE_CONF' && m.invokeId === bad.invokeId && m.status === 4));
  });

  it('the capture really holds split and coalesced frames', () => {
    const out = tshark([
      '-o', `ged145.port:${port}`, '-r', pcap, '-T', 'fields', '-e', 'tcp.len', '-e', 'ged145.type', '-E', 'occurrence=a', '-E', 'aggregator=|',
    ]);
    const rows = out.trim().split('\n').map((l) => l.split('\t'));
    assert.ok(rows.some(([len, types]) => Number(len) > 0 && !types), 'a segment that carries only part of a frame');
    assert.ok(rows.some(([, types]) => types && types.split('|').length > 1), 'a segment that carries several frames');
  });

  it('decodes the same messages three ways: the port preference, Decode As (-d), and the heuristic on any port', () => {
    const types = (opts) => tshark([...opts, '-r', pcap, '-Y', 'ged145', '-T', 'fields', '-e', 'ged145.type', '-E', 'occurrence=a', '-E', 'aggregator=,'])
      .split(/[\n,]/).filter(Boolean).map(Number);
    const byPref = types(['-o', `ged145.port:${port}`]);
    assert.ok(port !== 5000 && byPref.length > 50, `${byPref.length} messages`);
    const byDecodeAs = types(['-d', `tcp.port==${port},ged145`]);
    const byHeuristic = types([]); // the default port preference (5000) is not this capture's port
    assert.deepEqual(byDecodeAs, byPref);
    assert.deepEqual(byHeuristic, byPref);
    const protocols = tshark(['-r', pcap, '-T', 'fields', '-e', '_ws.col.Protocol']).split('\n').filter(Boolean);
    assert.ok(!protocols.includes('SMPP'), 'not mistaken for SMPP');
  });

  it('the heuristic leaves other TCP traffic alone', () => {
    const http = path.join(tmpDir(), 'http.pcap');
    const { PcapWriter } = require('../../simulator/pcap');
    const w = new PcapWriter(http);
    const flow = w.flow({ clientAddress: '127.0.0.1', clientPort: 40000, serverAddress: '127.0.0.1', serverPort: 8080 });
    flow.out(Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'));
    flow.in(Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'));
    flow.close();
    w.close();
    const protocols = tshark(['-r', http, '-T', 'fields', '-e', '_ws.col.Protocol']).split('\n').filter(Boolean);
    assert.ok(!protocols.includes('GED145'), protocols.join());
  });

  it('registers display-filter fields under ged145.', () => {
    const fields = execFileSync(
      'tshark', ['-G', 'fields', '-X', `lua_script:${LUA}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 256 * 1024 * 1024 }
    );
    for (const name of [
      'ged145.type', 'ged145.invoke_id', 'ged145.status', 'ged145.subtype', 'ged145.var1', 'ged145.var10', 'ged145.clid', 'ged145.ecc.name',
      'ged145.ecc_array.index', 'ged145.flags.duplicate', 'ged145.session_key',
    ]) {
      assert.ok(fields.includes(`\t${name}\t`), name);
    }
  });
});
