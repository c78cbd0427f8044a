'use strict';

// A plain node:http backend that is never the bottleneck: every POST gets a small fixed answer
// of the query contract. Prints its port on stdout.

const http = require('node:http');

// BENCH_ECC_ENTRIES=N: the answer carries N ECC entries of 20 characters (how answers grow).
const ECC = Number(process.env.BENCH_ECC_ENTRIES || 0);
const ecc = ECC > 0 ? Object.fromEntries(Array.from({ length: ECC }, (_, i) => [`user.e${i}`, 'v'.repeat(20)])) : { 'user.tier': '1' };
const ANSWER = JSON.stringify({ vars: { 1: 'A100042', 2: 'gold' }, ecc });
let served = 0; // GET /served: how many answers so far, for CPU per request (bench/limit.js)
const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  if (req.method === 'GET' && req.url === '/served') return res.end(String(served));
  served++;
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) });
    res.end(ANSWER);
  });
  return undefined;
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
