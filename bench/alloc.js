'use strict';

// Allocation per query, a figure the machine's noise hardly moves (docs/performance.md): each
// build's gateway runs with --trace-gc; after 2 s of sequential queries, the young-generation
// collections during 3 s more are counted, and the MB they freed. Queries per collection and KB
// per query, for this build and BENCH_BASELINE_BIN if given.
//   node bench/alloc.js
//   BENCH_BASELINE_BIN=/path/to/older/checkout/bin/ged145.js BENCH_WINDOW=32 node bench/alloc.js

const {
  startPlainBackend, startGateway, runClient, BIN,
} = require('./harness');
const { table, writeResult } = require('./report');

const WINDOW = Number(process.env.BENCH_WINDOW || 1);
// "Scavenge 14.0 (23.0) -> 13.2 (23.0) MB, 0.32 / 0.00 ms"
const SCAVENGE = /Scavenge(?: \(interleaved\))? ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, ([\d.]+)/;

async function measure(backendUrl, bin) {
  const gw = await startGateway(backendUrl, [], bin, ['--trace-gc']);
  let out = '';
  const take = (d) => { out += d; };
  gw.child.stdout.on('data', take);
  gw.child.stderr.on('data', take);
  const { port } = gw;
  await runClient({ port, kind: 'query', window: WINDOW, durationMs: 2000 });
  const from = out.length;
  const r = await runClient({ port, kind: 'query', window: WINDOW, durationMs: 3000, warmupMs: 0 });
  const scavenges = out.slice(from).split('\n').map((l) => SCAVENGE.exec(l)).filter(Boolean);
  await gw.stop();
  const queries = r.rate * 3;
  const freedMb = scavenges.reduce((a, m) => a + Number(m[1]) - Number(m[2]), 0);
  const ms = scavenges.reduce((a, m) => a + Number(m[3]), 0);
  return {
    queries: Math.round(queries),
    scavenges: scavenges.length,
    perScavenge: queries / scavenges.length,
    kbPerQuery: (freedMb * 1024) / queries,
    usPerQuery: (ms * 1000) / queries,
  };
}

async function main() {
  const backend = await startPlainBackend();
  const builds = [['this build', BIN]];
  if (process.env.BENCH_BASELINE_BIN) builds.push(['baseline', process.env.BENCH_BASELINE_BIN]);
  const rows = [];
  for (const [name, bin] of builds) rows.push({ name, ...(await measure(backend.url, bin)) });
  await backend.stop();
  process.stdout.write(table(['gateway', 'queries', 'scavenges', 'queries/scavenge', 'KB freed/query', 'scavenge us/query'],
    rows.map((r) => [r.name, r.queries, r.scavenges, r.perScavenge, r.kbPerQuery, r.usPerQuery])));
  process.stdout.write(`window ${WINDOW}; KB freed per query = what young-generation collections reclaimed, about what a query allocates\n`);
  writeResult('alloc', { window: WINDOW, rows });
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
