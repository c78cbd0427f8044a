'use strict';

// npm run bench: every benchmark in turn, each printing its table and writing bench/results/*.json.
//   BENCH_REPEATS (3), BENCH_SECONDS (3), BENCH_RATES (1000,2000,5000), BENCH_OPEN_SECONDS (30)

const path = require('node:path');
const { spawnSync } = require('node:child_process');

const BENCHES = [
  ['codec', 'codec.js', 'protocol codec throughput on one core'],
  ['bare', 'bare.js', 'heartbeats: gateway vs a bare server with the same framing'],
  ['http', 'http.js', 'queries: gateway vs its HTTP engine called directly; undici vs axios'],
  ['limit', 'limit.js', 'queries against the physical limit: bare framed round trip + direct HTTP'],
  ['critical-path', 'critical-path.js', 'one query in flight, beside the bare proxy: the gateway\'s side step by step, the round trip hop by hop'],
  ['alloc', 'alloc.js', 'what a query allocates: young-generation collections under sequential queries'],
  ['profile', 'profile.js', 'where a query\'s CPU goes, kind by kind, in the gateway and in the bare proxy at 32 in flight'],
  ['open-loop', 'open-loop.js', 'fixed rates through the router simulator'],
  ['workers', 'workers.js', '--workers 1 vs 2'],
  ['cold-start', 'cold-start.js', 'the first seconds after a start, with and without the warm-up'],
  ['availability', 'availability.js', 'queries with the breaker and retry on vs off, and from the cache'],
  ['breaker', 'breaker.js', 'answered with the breaker on vs off: a failing subtype, slow, flapping, a hung first origin'],
  ['memory', 'memory.js', 'RSS idle after start and high-water under 2,000 queries/s for 30 s'],
  ['growth', 'growth.js', 'p50/p99 and CPU per query as sessions, ECC entries and workers grow'],
  ['compression', 'compression.js', 'what a gzipped answer costs the engine (and the server): CPU per request'],
  ['shadow-hang', 'shadow-hang.js', 'RSS while a shadow candidate never answers, beside no shadow, 500 queries/s for 40 s'],
];

const only = process.argv.slice(2);
const unknown = only.filter((name) => !BENCHES.some(([n]) => n === name));
if (unknown.length > 0) {
  process.stderr.write(`bench: no benchmark named ${unknown.join(', ')}; the benchmarks are:\n${BENCHES.map(([
    n, , what,
  ]) => `  ${n.padEnd(11)} ${what}`).join('\n')}\n`);
  process.exit(2);
}
let failed = 0;
for (const [name, file, what] of BENCHES) {
  if (only.length && !only.includes(name)) continue;
  process.stdout.write(`\n## ${name}: ${what}\n`);
  const r = spawnSync(process.execPath, [path.join(__dirname, file)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
