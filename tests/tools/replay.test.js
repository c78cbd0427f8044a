'use strict';

// ged145 replay at a router's scale: a capture of 100,000 queries on one connection, written here
// with the router simulator's own pcap writer, replayed by the CLI (a child process) against the
// conformance kit's host over loopback. The host loses every 7th reply and writes each other one
// twice, and fails the subtype `fail`: every request must end in exactly one of match, differ,
// missing or late, every second reply must be counted extra, and the last line and the exit code
// must say the same. Then lateness against the router's RequestTimeout, at the captured pace.

const assert = require('node:assert/strict');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { serialize } = require('../../lib/protocol');
const { PcapWriter } = require('../../simulator/pcap');
const { startConformanceHost } = require('../helpers/conformance-host');
const { runCli } = require('../helpers/spawn');
const { tmpDir } = require('../helpers/tmp');

/** Frames written per TCP segment, as a busy router's writes coalesce. */
const BATCH = 20;

/**
 * A capture of one router connection: OPEN_REQ, then `queries` QUERY_REQs (query k has InvokeID
 * k + 1, subtype `fail` when failing(k), else `lookup`), each captured answer a QUERY_RESP with
 * VAR1 "ok" (the conformance host's answer to `lookup`), in batches of BATCH frames each way.
 */
function writeCapture(file, { queries, failing = () => false }) {
  const writer = new PcapWriter(file);
  const flow = writer.flow({
    clientAddress: '10.1.0.1', clientPort: 40100, serverAddress: '10.1.0.2', serverPort: 5000,
  });
  flow.out(serialize.openReq({
    invokeId: 1, version: 2, idleTimeoutMs: 60_000, config: 'replay-test',
  }, { nul: true }));
  flow.in(serialize.openConf(1));
  for (let k = 1; k <= queries; k += BATCH) {
    const out = [];
    const back = [];
    for (let j = k; j < k + BATCH && j <= queries; j++) {
      out.push(serialize.queryReq({
        invokeId: j + 1, routerCallDay: 1, routerCallKey: j, subtype: failing(j) ? 'fail' : 'lookup', clid: `55501${j}`,
      }, { nul: true }));
      back.push(serialize.queryResp({ invokeId: j + 1, status: 0, vars: { 1: 'ok' } }));
    }
    flow.out(Buffer.concat(out));
    flow.in(Buffer.concat(back));
  }
  flow.close();
  writer.close();
}

const HEADLINE = /^(\d+) of (\d+) answers match \([\d.]+ %\), (\d+) differ, (\d+) missing, (late not judged|\d+ late), (\d+) extra: the host answers (as captured|otherwise)$/m;

function headline(out) {
  const m = HEADLINE.exec(out);
  assert.ok(m, `no headline in:\n${out.slice(-2000)}`);
  return {
    match: Number(m[1]), total: Number(m[2]), differ: Number(m[3]), missing: Number(m[4]), late: m[5], extra: Number(m[6]), verdict: m[7],
  };
}

describe('ged145 replay at a router\'s scale', function () {
  this.timeout(120_000);
  let host;
  afterEach(() => host && host.close());

  it('100,000 queries on one connection: every one counted once, the second replies extra, and exit 1 with the headline', async () => {
    const queries = 100_000;
    const failing = (k) => k % 1000 === 0;
    const file = path.join(tmpDir('ged145-replay-'), 'busy.pcap');
    writeCapture(file, { queries, failing });
    host = await startConformanceHost({ faults: ['twice', 'lostReply'] });
    const started = performance.now();
    const r = await runCli(['replay', file, '--target', `127.0.0.1:${host.port}`, '--as-fast-as-possible', '--json']);
    const seconds = (performance.now() - started) / 1000;
    assert.equal(r.code, 1, r.err);
    const result = JSON.parse(r.out);
    // The host counts queries in the order they arrive (one connection): the 7th, 14th... gets no reply.
    let lost = 0;
    let failed = 0;
    for (let k = 1; k <= queries; k++) {
      if (k % 7 === 0) lost++;
      else if (failing(k)) failed++;
    }
    assert.deepEqual(
      {
        total: result.total, match: result.match, differ: result.differ, missing: result.missing, late: result.late, extra: result.extra,
      },
      {
        total: queries + 1, match: queries + 1 - lost - failed, differ: failed, missing: lost, late: 0, extra: queries - lost,
      },
    );
    assert.equal(result.same, false);
    assert.equal(result.lateJudged, false);
    const missing = result.rows.find((row) => row.verdict === 'missing');
    assert.equal(missing.invokeId, 7 + 1, 'the 7th query (InvokeID 8) is the first without a reply');
    const differs = result.rows.find((row) => row.verdict === 'differ');
    assert.deepEqual([differs.invokeId, differs.difference], [1000 + 1, 'type']);
    process.stdout.write(`      (100,000 queries replayed in ${seconds.toFixed(1)} s, the child process's start included)\n`);
  });

  it('the table and the last line say what the JSON says; a host that answers as captured exits 0', async () => {
    const file = path.join(tmpDir('ged145-replay-'), 'small.pcap');
    writeCapture(file, { queries: 40 });
    host = await startConformanceHost({ faults: ['twice'] });
    const twice = await runCli(['replay', file, '--target', `127.0.0.1:${host.port}`, '--as-fast-as-possible']);
    assert.equal(twice.code, 1, twice.out + twice.err);
    assert.match(twice.out, /^QUERY_REQ +40 +40 +0 +0 +0$/m);
    assert.match(twice.out, /^40 answers from the host to no request of the capture/m);
    assert.deepEqual(headline(twice.out), {
      match: 41, total: 41, differ: 0, missing: 0, late: 'late not judged', extra: 40, verdict: 'otherwise',
    });
    await host.close();
    host = await startConformanceHost();
    const same = await runCli(['replay', file, '--target', `127.0.0.1:${host.port}`, '--as-fast-as-possible']);
    assert.equal(same.code, 0, same.out + same.err);
    assert.deepEqual(headline(same.out), {
      match: 41, total: 41, differ: 0, missing: 0, late: 'late not judged', extra: 0, verdict: 'as captured',
    });
  });

  it('at the captured pace, an answer after the router\'s RequestTimeout is late; --request-timeout moves the line', async () => {
    const file = path.join(tmpDir('ged145-replay-'), 'late.pcap');
    writeCapture(file, { queries: 6 });
    host = await startConformanceHost({ faults: ['late'] }); // every reply held until 350 ms after its query
    const late = await runCli(['replay', file, '--target', `127.0.0.1:${host.port}`]);
    assert.equal(late.code, 1, late.out + late.err);
    const counts = headline(late.out);
    // The six queries are held 350 ms; the OPEN_CONF comes at once (late too only if the machine stalls 300 ms).
    const lateCount = Number((/^(\d+) late$/.exec(counts.late) || [])[1]);
    assert.ok(lateCount >= 6, late.out);
    assert.deepEqual(
      [counts.total, counts.match + lateCount, counts.differ, counts.missing, counts.extra, counts.verdict],
      [7, 7, 0, 0, 0, 'otherwise'],
    );
    assert.equal(late.out.match(/^LATE \(late: \d+ ms\) +10\.1\.0\.1:40100 -> 10\.1\.0\.2:5000 +QUERY_REQ/gm).length, 6, late.out);
    // 350 ms is late for a router waiting 300 ms, in time for one waiting 5 s (generous for a loaded machine).
    const patient = await runCli(['replay', file, '--target', `127.0.0.1:${host.port}`, '--request-timeout', '5000']);
    assert.equal(patient.code, 0, patient.out + patient.err);
    assert.equal(headline(patient.out).late, '0 late');
  });
});
