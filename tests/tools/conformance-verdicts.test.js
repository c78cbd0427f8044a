'use strict';

// The conformance kit against hosts that lie, each written for the test from the correct test
// host (tests/helpers/conformance-host.js) with one lie switched on: a host that answers every
// query with HEARTBEAT_CONF, one that answers every query again 400 ms later, one that answers
// with InvokeID + 1, one that holds heartbeats back, one that dies in the middle of the run. Each
// must be caught by the rule it breaks, reported once per defect under its cause, with the
// exchange a vendor can act on; and the cases after a dead host are not run, counted apart.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { XMLParser } = require('fast-xml-parser');
const { startConformanceHost } = require('../helpers/conformance-host');
const { runCli } = require('../helpers/spawn');
const { tmpDir } = require('../helpers/tmp');
const { runSuite } = require('../../tools/conformance/run');

const KEY = Buffer.from('12345678');

/** The kit in-process against the test host with these faults: the run, and each case's result by short id. */
async function against(faults, cases, hostOptions = {}) {
  const host = await startConformanceHost({ faults, desKey: KEY, ...hostOptions });
  try {
    const run = await runSuite({
      target: { host: '127.0.0.1', port: host.port, tls: null }, subtype: 'lookup', slowSubtype: 'slow', failingSubtype: 'fail',
      desKey: KEY, version: 2, connectTimeoutMs: 3000, cases,
    });
    return { run, by: Object.fromEntries(run.results.map((r) => [r.id.replace('ged145/', ''), r])) };
  } finally {
    await host.close();
  }
}

const failing = (run) => run.results.filter((r) => r.result === 'fail' || r.result === 'non-strict').map((r) => r.id.replace('ged145/', '')).sort();
const marked = (r) => r.exchange.flatMap((c) => c.rows.filter((row) => row.marked));

describe('the conformance kit against hosts that lie', function () {
  this.timeout(120_000);

  it('a host that answers every query with HEARTBEAT_CONF fails every MUST case that asks a query, as "replies with another type"', async () => {
    const cases = 'ged145/query/1,ged145/query/2,ged145/query/4,ged145/query/8,ged145/framing/3,ged145/transport/1,ged145/heartbeat/1,ged145/open/1';
    const { run, by } = await against(['heartbeatConfForQuery'], cases);
    assert.deepEqual(failing(run), ['framing/3', 'query/1', 'query/2', 'query/4', 'query/8', 'transport/1']);
    const ids = ['framing/3', 'query/1', 'query/2', 'query/4', 'query/8', 'transport/1'].map((id) => `ged145/${id}`);
    assert.deepEqual(run.causes, [{ cause: 'replies with another type', ids }]);
    assert.equal(run.exitCode, 1);
    const anotherType = /^a reply of another type: HEARTBEAT_CONF id=(\d+) at \d+ ms to QUERY_REQ id=(\d+) \(it allows QUERY_RESP or FAILURE_CONF\)$/;
    const [, id, again] = anotherType.exec(by['query/1'].observed) || [];
    assert.ok(id && id === again, by['query/1'].observed);
    assert.deepEqual(marked(by['query/1']).map((row) => row.frame.split(' ')[0]), ['QUERY_REQ', 'HEARTBEAT_CONF']);
  });

  it('a host that answers every query again 400 ms later fails the exactly-once cases, grouped as "answers twice", and the run exits 1', async () => {
    const { run, by } = await against(['twiceLate'], 'ged145/framing/3,ged145/query/1,ged145/query/2,ged145/open/1');
    assert.deepEqual(failing(run), ['framing/3', 'query/1', 'query/2']);
    assert.deepEqual(run.causes, [{ cause: 'answers twice', ids: ['ged145/framing/3', 'ged145/query/1', 'ged145/query/2'] }]);
    assert.equal(run.exitCode, 1);
    const r = by['query/1'];
    const [, id, first, second] = /^2 replies to QUERY_REQ id=(\d+): QUERY_RESP id=\1 E_AG_NO_ERROR at (\d+) ms, QUERY_RESP id=\1 E_AG_NO_ERROR at (\d+) ms$/.exec(r.observed) || [];
    assert.ok(id, r.observed);
    assert.ok(Number(second) - Number(first) >= 390, r.observed);
    // The exchange: the request and both replies marked, in hex as written, the rows around them only.
    const rows = marked(r);
    assert.deepEqual(rows.map((row) => row.dir), ['router->host', 'host->router', 'host->router']);
    const hexId = Number(id).toString(16).padStart(8, '0');
    for (const row of rows) assert.equal(row.hex.replace(/ /g, '').slice(16, 24), hexId, row.hex);
    assert.match(rows[0].frame, new RegExp(`^QUERY_REQ id=${id} `));
    assert.ok(r.exchange[0].rows.length <= 12, `${r.exchange[0].rows.length} rows`);
    const pipelined = by['query/2'];
    assert.ok(pipelined.exchange[0].rows.length <= 20, `query/2 shows ${pipelined.exchange[0].rows.length} rows of 600`);
    assert.ok(JSON.stringify(pipelined).length < 10_000, `${JSON.stringify(pipelined).length} bytes`);
    assert.match(pipelined.observed, /; and 199 more like it on connection 1$/);
    assert.match(r.source, /^Cisco.*\[certain\]$/);
  });

  it('a host that answers with InvokeID + 1 is caught by the id that came, whatever ids the kit used', async () => {
    const { run, by } = await against(['wrongInvokeId'], 'ged145/query/1,ged145/open/1,ged145/transport/1');
    assert.deepEqual(failing(run), ['query/1', 'transport/1']);
    assert.deepEqual(run.causes.map((c) => c.cause), ['replies with another InvokeID']);
    const anotherId = /^a reply with another InvokeID: QUERY_RESP id=(\d+) E_AG_NO_ERROR at \d+ ms, and no request on connection 1 carried id=\1 \(one more than the id of: QUERY_REQ id=(\d+)\)$/;
    const [, came, sent] = anotherId.exec(by['query/1'].observed) || [];
    assert.ok(came, by['query/1'].observed);
    assert.equal(Number(came), Number(sent) + 1);
    // The kit's ids are sparse: nowhere near 1, 2, 3, and never two in a row.
    const open = by['query/1'].exchange[0].rows.find((row) => /^OPEN_REQ/.test(row.frame || ''));
    const openId = Number(/^OPEN_REQ id=(\d+)/.exec(open.frame)[1]);
    assert.ok(openId > 255 && Number(sent) > 255 && Math.abs(Number(sent) - openId) > 1, `${openId}, ${sent}`);
  });

  it('a host that holds heartbeats back is reported as a late reply, with the type, the id and when it came', async () => {
    const { by } = await against(['heartbeatsHeld'], 'ged145/heartbeat/1,ged145/open/7', { heldMs: 2400 });
    // heartbeat/1 waits 2 s for its reply; the one held 2.4 s comes while the connection is watched.
    assert.match(by['heartbeat/1'].observed, /^a late reply: HEARTBEAT_CONF id=\d+ 2\d{3} ms after the request; the case waited 2000 ms$/);
    assert.equal(by['heartbeat/1'].cause, 'late reply');
    assert.equal(by['open/7'].result, 'pass', by['open/7'].observed); // it keeps beating while it waits: the session holds
    const held = await against(['heartbeatsHeld'], 'ged145/heartbeat/1,ged145/open/7');
    assert.match(held.by['heartbeat/1'].observed, /^a late reply: HEARTBEAT_CONF id=\d+ 1\d{3} ms after HEARTBEAT_REQ, past HeartbeatTimeout \(300 ms\)$/);
    assert.equal(held.by['open/7'].result, 'pass', held.by['open/7'].observed); // only late: the session itself holds
  });

  it('a host that dies in a case: that case fails, the cases after it are not run and counted apart; console and JUnit say so', async () => {
    const host = await startConformanceHost({ faults: ['diesOnSplit'] });
    const dir = tmpDir('ged145-conformance-dies-');
    let r;
    try {
      const cases = 'ged145/framing/*,ged145/query/*';
      r = await runCli(['conformance', '--target', `127.0.0.1:${host.port}`, '--subtype', 'lookup', '--cases', cases, '--report', dir]);
    } finally {
      await host.close();
    }
    assert.equal(r.code, 1, r.out + r.err);
    const lines = r.out.trim().split('\n');
    assert.equal(lines[lines.length - 1], '0 passed, 1 failed, 0 skipped, 18 not run');
    assert.match(r.out, /^FAIL +MUST +ged145\/framing\/1 /m);
    assert.match(r.out, /^ +actual: 63 of 63 got no reply \(first: id=\d+\): the host closed connection 1 at \d+ ms$/m);
    assert.match(r.out, /^NOT RUN +MUST +ged145\/framing\/2 .*\n +not run: the host closed the connection in ged145\/framing\/1 and accepts no more connections \(ECONNREFUSED\)$/m);
    assert.match(r.out, /^failures by cause:\n {2}closes the connection \(1\): ged145\/framing\/1$/m);
    assert.match(r.out, /^18 case\(s\) not run: the host closed the connection in ged145\/framing\/1/m);
    // The split writes are in the exchange: a row per piece, the TCP write it went in, and which bytes of the frame.
    assert.match(r.out, /router->host write 2 \[bytes 0-0 of a frame whose header is not complete\]: 00$/m);
    const report = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'));
    assert.equal(report.summary.notRun, 18);
    assert.equal(report.summary.failed, 1);
    const junit = new XMLParser({ ignoreAttributes: false }).parse(fs.readFileSync(path.join(dir, 'junit.xml'), 'utf8'));
    const tcs = junit.testsuites.testsuite.testcase;
    const failed = tcs.find((t) => t.failure);
    assert.match(failed['@_name'], /^ged145\/framing\/1 /);
    const props = Object.fromEntries(failed.properties.property.map((p) => [p['@_name'], p['@_value']]));
    assert.equal(props.level, 'MUST');
    assert.match(props.source, /^Cisco's GED-145 .*\[certain\]$/);
    assert.equal(props.cause, 'closes the connection');
    assert.match(failed.failure['#text'], /expected: one reply to each of the queries, whatever the split\n +actual: 63 of 63 got no reply/);
    assert.match(failed.failure['#text'], /^>> +[\d.]+ ms connection 1 router->host write \d+ \[bytes 0-0 of [^\]]+\]: [0-9a-f]{2}$/m);
    assert.equal(tcs.filter(({ skipped }) => skipped && /^not run: the host closed/.test(skipped['@_message'])).length, 18);
  });
});
