'use strict';

// Codec throughput on one core: heartbeats through framer + decoder, and full QUERY_REQ decode +
// QUERY_RESP encode pairs. Prints a table (median of repeated runs) and writes bench/results/codec.json.

const { MessageReader, serialize } = require('../lib/protocol');
const { table, writeResult } = require('./report');

const REPEATS = Number(process.env.BENCH_REPEATS || 5);
const BATCH = 1000; // frames per chunk, as a busy socket delivers them

function measure(fn, seconds = 1) {
  const start = process.hrtime.bigint();
  const until = start + BigInt(Math.round(seconds * 1e9));
  let ops = 0;
  let now = start;
  while (now < until) {
    ops += fn();
    now = process.hrtime.bigint();
  }
  return ops / (Number(now - start) / 1e9);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function heartbeatCase() {
  const chunk = Buffer.concat(Array.from({ length: BATCH }, (_, i) => serialize.heartbeatReq(i)));
  let seen = 0;
  const reader = new MessageReader({ onMessage: () => { seen++; }, onError: (e) => { throw e; } });
  return () => {
    const before = seen;
    reader.push(chunk);
    if (seen - before !== BATCH) throw new Error('the reader lost heartbeats');
    return BATCH;
  };
}

const FULL_QUERY = {
  invokeId: 3, routerCallDay: 154321, routerCallKey: 1234, subtype: 'acct.lookup', ced: '1234#',
  clid: '5551234567', cdpd: '99', routingClient: 'CVP_PG_1A', dn: '8005551000',
  vars: { 1: '12345', 10: 'ten' }, ecc: { 'user.acct': 'A1' }, eccArrays: [{ name: 'user.hist', index: 2, value: 'x' }],
};

function queryPairCase() {
  const chunk = Buffer.concat(Array.from({ length: BATCH }, (_, i) => serialize.queryReq({ ...FULL_QUERY, invokeId: i }, { nul: true })));
  let bytes = 0;
  const reader = new MessageReader({
    onMessage: (q) => {
      const resp = serialize.queryResp({
        invokeId: q.invokeId, status: 0, vars: { 2: 'gold', 3: q.clid }, ecc: { 'user.tier': '1' }, eccArrays: q.eccArrays,
      });
      bytes += resp.length;
    },
    onError: (e) => { throw e; },
  });
  return () => {
    const before = bytes;
    reader.push(chunk);
    if (bytes === before) throw new Error('no QUERY_RESP was encoded');
    return BATCH;
  };
}

function splitChunksCase() {
  // The same heartbeats, but every frame split across two chunks: the copy path.
  const frames = Array.from({ length: BATCH }, (_, i) => serialize.heartbeatReq(i));
  const stream = Buffer.concat(frames);
  const chunks = [];
  for (let i = 0; i < stream.length; i += 10) chunks.push(stream.subarray(i, i + 10));
  const reader = new MessageReader({ onMessage: () => {}, onError: (e) => { throw e; } });
  return () => {
    for (const c of chunks) reader.push(c);
    return BATCH;
  };
}

function main() {
  const cases = [
    ['heartbeat frames/s (framer + decoder, 1000 per chunk)', heartbeatCase(), 1_000_000],
    ['heartbeat frames/s (every frame split across chunks)', splitChunksCase(), null],
    ['QUERY_REQ decode + QUERY_RESP encode pairs/s', queryPairCase(), 300_000],
  ];
  const rows = [];
  for (const [name, fn, target] of cases) {
    measure(fn, 0.3); // warm up
    const runs = [];
    for (let r = 0; r < REPEATS; r++) runs.push(measure(fn, 1));
    const med = median(runs);
    rows.push({
      case: name, median: Math.round(med), min: Math.round(Math.min(...runs)), max: Math.round(Math.max(...runs)), target, ratio: target ? med / target : null,
    });
  }
  process.stdout.write(table(['case', 'median/s', 'min/s', 'max/s', 'target/s', 'x target'],
    rows.map((r) => [r.case, r.median, r.min, r.max, r.target || '-', r.ratio ? r.ratio.toFixed(2) : '-'])));
  writeResult('codec', { repeats: REPEATS, rows });
}

if (require.main === module) main();
