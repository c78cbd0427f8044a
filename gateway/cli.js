'use strict';

const { holdYoungGeneration, applyMemorySettings } = require('../lib/heap');
const { OperatorError } = require('../lib/errors');
const { numberFlag } = require('../lib/cli-flags');

const summary = 'the GED-145 application gateway host (answers ICM routers from a REST backend)';
const usage = `usage: ged145 gateway [options]

  --config FILE          JSON config file (see docs/configuration.md)
  --port N               GED-145 port for the routers (default 5000)
  --host ADDR            address to listen on (default 0.0.0.0)
  --backend URL          REST backend base URL for the default query contract
  --engine NAME          HTTP client: undici (default) or axios
  --deadline MS          per-query deadline (default 250, below the router's 300)
  --admin-port N         admin HTTP port: /health /ready /sessions /metrics (default 8080)
  --workers N            worker processes sharing the port (default 1)
  --log-level L          error | warn | info | debug (default info)
  --log-file FILE        also write JSON log lines to FILE (rotated at 10 MB, 5 kept)
  --redact               keep CLID, CED, CDPD, DN and variable values out of the logs
  --trace-frames N       log the first N frames of each session each way, as hex and decoded
  --embedded-backend     with no backend configured, serve from a built-in REST simulator
  --des-key-file FILE    the DES private key for encrypted sessions (or GED145_DES_KEY)
  --tls-cert FILE        listen with TLS: certificate (PEM)
  --tls-key FILE         ... and its private key (PEM)
  --tls-ca FILE          ... and require client certificates signed by this CA

Environment: GED145_PORT, GED145_HOST, GED145_BACKEND_URL, GED145_ENGINE, GED145_DEADLINE_MS,
GED145_ADMIN_PORT, GED145_LOG_LEVEL, GED145_LOG_FILE, GED145_REDACT, GED145_WORKERS,
GED145_DES_KEY (16 hex digits or 8 ASCII characters; never logged), GED145_DES_KEY_FILE.
Flags override the environment, which overrides the config file.
`;

const options = {
  config: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  backend: { type: 'string' },
  engine: { type: 'string' },
  deadline: { type: 'string' },
  'admin-port': { type: 'string' },
  workers: { type: 'string' },
  'log-level': { type: 'string' },
  'log-file': { type: 'string' },
  redact: { type: 'boolean' },
  'trace-frames': { type: 'string' },
  'embedded-backend': { type: 'boolean' },
  'des-key-file': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-ca': { type: 'string' },
};

const int = (values, key) => numberFlag(values, key, { int: true });

async function main(values) {
  holdYoungGeneration(); // before the gateway's modules load (lib/heap.js)
  const { loadConfig } = require('./config');
  const { createLogger } = require('../lib/logger');
  // Kept for SIGHUP: a reload reads the same file, the environment and the same flags again.
  const source = {
    file: values.config,
    overrides: {
      port: int(values, 'port'),
      host: values.host,
      'backend.url': values.backend,
      'backend.engine': values.engine,
      deadlineMs: int(values, 'deadline'),
      'admin.port': int(values, 'admin-port'),
      workers: int(values, 'workers'),
      'log.level': values['log-level'],
      'log.file': values['log-file'],
      'log.redact': values.redact,
      'log.traceFrames': int(values, 'trace-frames'),
      'des.keyFile': values['des-key-file'],
      'tls.cert': values['tls-cert'],
      'tls.key': values['tls-key'],
      'tls.ca': values['tls-ca'],
    },
  };
  const config = loadConfig(source);
  applyMemorySettings(config.memory);
  const log = createLogger({ component: 'gateway', ...config.log });
  // Signal handlers before anything starts: without one, a SIGHUP during the start (an operator,
  // logrotate) would kill the process, Node's default; a SIGTERM then waits for the start to end.
  let sim = null;
  let running = null;
  let stopSignal = null;
  let reloadWaiting = false;
  let stopping = false;
  const stop = async (signal) => {
    if (stopSignal === null) stopSignal = signal;
    if (running === null || stopping) return; // still starting: stopped as soon as it has started
    stopping = true;
    await running.stop(stopSignal);
    if (sim) await sim.close();
    process.exit(0);
  };
  const reload = () => {
    if (stopSignal !== null) return;
    if (running === null) {
      reloadWaiting = true; // applied once the start is over
      return;
    }
    let next;
    try {
      next = loadConfig(source);
    } catch (err) {
      log.error(`reload refused, the running configuration stays in force: ${err.message}`);
      return;
    }
    if (next.backend.url === null && sim) next.backend.url = sim.url;
    running.reload(next);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', reload);
  if (config.backend.url === null) {
    if (!values['embedded-backend']) {
      throw new OperatorError('no backend configured: give --backend URL (or backend.url in the config), '
        + 'or --embedded-backend to serve from the built-in REST simulator');
    }
    const { startRestSim } = require('../rest-sim/server'); // only here: production never loads the simulator
    sim = await startRestSim({ port: 0, host: '127.0.0.1' });
    config.backend.url = sim.url;
    log.warn(`no backend configured: serving from the built-in REST simulator at ${sim.url}; `
      + 'its answers are test data (set --backend URL or backend.url for a real backend)');
  }
  running = config.workers > 1 ? await require('./ops/cluster').startCluster(config, { log }) : await require('./index').startGateway(config, { log });
  if (stopSignal !== null) {
    await stop(stopSignal);
    return;
  }
  if (sim) {
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    log.info(`next, in another terminal: npx ged145 router --host ${host} --port ${running.port} --rate 200 --duration 5`);
  }
  if (reloadWaiting) reload();
}

module.exports = { summary, usage, options, main };
