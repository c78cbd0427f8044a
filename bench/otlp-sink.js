'use strict';

// An OTLP/HTTP trace sink on loopback that takes every export and keeps nothing: a collector that
// is never the bottleneck, for measuring what traces cost the gateway (docs/tracing.md). Prints its
// port on stdout; GET /received says how many exports and bytes it took.
//   node bench/otlp-sink.js   ->  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port>

const http = require('node:http');

let batches = 0;
let bytes = 0;
const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  if (req.method === 'GET' && req.url === '/received') return res.end(JSON.stringify({ exports: batches, bytes }));
  req.on('data', (c) => { bytes += c.length; });
  req.on('end', () => {
    batches++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
    res.end();
  });
  return undefined;
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
