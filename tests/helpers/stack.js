'use strict';

// Starts what an integration test needs on 127.0.0.1, on free ports: the REST simulator, a
// gateway in this process (so tests can read its state) with a silent or capturing logger.

const http = require('node:http');
const winston = require('winston');
const { Writable } = require('node:stream');
const { startRestSim } = require('../../rest-sim/server');
const { loadConfig } = require('../../gateway/config');
const { startGateway } = require('../../gateway');

/** A winston logger that keeps every line (as JSON objects) in memory. */
function captureLogger(level = 'debug') {
  const lines = [];
  const stream = new Writable({
    write(chunk, enc, cb) {
      lines.push(JSON.parse(chunk.toString()));
      cb();
    },
  });
  const logger = winston.createLogger({
    level,
    format: winston.format.json(),
    transports: [new winston.transports.Stream({ stream })],
  });
  logger.lines = lines;
  return logger;
}

async function startStack({ gateway = {}, restSim = {}, backendUrl, logger, env = {} } = {}) {
  const sim = backendUrl ? null : await startRestSim({ port: 0, ...restSim });
  const config = loadConfig({
    env,
    overrides: {
      host: '127.0.0.1',
      port: 0,
      'admin.port': 0,
      'backend.url': backendUrl || sim.url,
      routerRequestTimeoutMs: 600_000, // tests may give the backend seconds; the 300 ms rule has its own test
      warmup: false, // seconds saved per test; tests/gateway/ops/warmup.test.js covers it
      ...gateway,
    },
  });
  const log = logger || captureLogger('info');
  const gw = await startGateway(config, { log });
  return {
    sim,
    gw,
    gateway: gw.gateway,
    port: gw.port,
    adminPort: gw.adminPort,
    log,
    config,
    async stop() {
      await gw.stop('test over');
      if (sim) await sim.close();
    },
  };
}

/** A programmable HTTP backend for failure modes the REST simulator does not cover. */
async function startTestBackend(handler) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const entry = { method: req.method, url: req.url, headers: req.headers, body, closed: false };
      requests.push(entry);
      res.on('close', () => { entry.closed = !res.writableFinished; });
      handler(req, res, entry);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    server,
    close() {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

module.exports = { startStack, startTestBackend, captureLogger };
