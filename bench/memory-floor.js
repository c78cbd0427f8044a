'use strict';

// The floor under the gateway's RSS, run as its own process by bench/memory.js: Node alone
// (`node bench/memory-floor.js node`), or Node with the libraries the gateway loads when its admin
// port and metrics are on (winston, express, prom-client with Node's default metrics, undici's Pool with
// one request made so its HTTP parser is compiled, binary-parser), doing nothing else
// (`node bench/memory-floor.js libraries`). Prints its pid once settled, then idles until killed.

const { holdYoungGeneration } = require('../lib/heap');

async function main() {
  holdYoungGeneration(); // the gateway's own V8 settings, so only the libraries differ
  if (process.argv[2] === 'libraries') {
    const http = require('node:http');
    const winston = require('winston');
    winston.createLogger({ transports: [new winston.transports.Console({ silent: true })] });
    require('express')();
    const client = require('prom-client');
    client.collectDefaultMetrics({ register: new client.Registry() });
    require('binary-parser');
    const { Engine } = require('../gateway/backend/engines/undici'); // undici's Pool, loaded as the gateway loads it
    const server = http.createServer((req, res) => res.end('{}'));
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const engine = new Engine({ connections: 64, maxResponseBytes: 65_536, keepAliveTimeout: 4000 }); // the defaults of config/schema.js
    await engine.request({ origin: `http://127.0.0.1:${server.address().port}`, path: '/', method: 'POST', body: '{}' });
    await engine.close();
    await new Promise((r) => server.close(r));
  }
  process.stdout.write(`${process.pid}\n`);
  setInterval(() => {}, 60_000);
}

main();
