'use strict';

// Preloaded into a process under test (node --require bench/loop-probe.js ...): its event loop's
// delay, as perf_hooks.monitorEventLoopDelay sees it, on a loopback HTTP port of its own that it
// writes to the file LOOP_PROBE_FILE names. GET /reset starts a new measure; GET /read answers
// {maxMs, p99Ms, meanMs} since the last reset. Unref'd: it never keeps the process alive.

const fs = require('node:fs');

const http = require('node:http');
const { monitorEventLoopDelay } = require('node:perf_hooks');

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();

const ms = (ns) => Math.round(ns / 1e4) / 100;
const server = http.createServer((req, res) => {
  if (req.url === '/reset') delay.reset();
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ maxMs: ms(delay.max), p99Ms: ms(delay.percentile(99)), meanMs: ms(delay.mean) }));
});
server.listen(0, '127.0.0.1', () => fs.writeFileSync(process.env.LOOP_PROBE_FILE, String(server.address().port)));
server.unref();
