'use strict';

const { holdYoungGeneration, applyMemorySettings } = require('../lib/heap');
const { OperatorError } = require('../lib/errors');
const { numberFlag } = require('../lib/cli-flags');

const { FLAGS, leaves } = require('./config/schema');

const summary = 'the GED-145 application gateway host (answers ICM routers from a REST backend)';

/** Flags that are not config keys. */
const OWN_FLAGS = [
  { name: 'config', arg: 'FILE', help: 'JSON config file (see docs/configuration.md; `ged145 config schema` for editors)' },
  { name: 'embedded-backend', arg: null, help: 'with no backend configured, serve from a built-in REST simulator' },
  { name: 'ready-json', arg: null, help: 'once serving, print {"ready": "gateway", "port", "adminPort", ...} on stdout' },
];
const ALL_FLAGS = [OWN_FLAGS[0], ...FLAGS, ...OWN_FLAGS.slice(1)];
const line = (f) => {
  const left = `  --${f.name}${f.arg ? ` ${f.arg}` : ''}`;
  const dflt = f.dflt === undefined || f.dflt === null || f.dflt === false ? '' : ` (default ${f.dflt})`;
  return `${left.padEnd(25)}${f.help}${dflt}`;
};
const ENV_NAMES = [...leaves()].map(([, n]) => n['x-env']).filter(Boolean);

const usage = `usage: ged145 gateway [options]

${ALL_FLAGS.map(line).join('\n')}

Environment: ${ENV_NAMES.join(', ').replace(/(.{1,90})(, |$)/g, (m, text, comma) => `${text}${comma ? ',\n' : ''}`)},
GED145_DES_KEY (16 hex digits or 8 ASCII characters; never logged).
Flags override the environment, which overrides the config file.
`;

const options = Object.fromEntries(ALL_FLAGS.map((f) => [f.name, { type: f.arg === null ? 'boolean' : 'string' }]));

/** The config keys the flags set ({"backend.url": ...}), undefined for a flag not given. */
function overridesOf(values) {
  const out = {};
  for (const f of FLAGS) out[f.key] = f.type === 'integer' ? numberFlag(values, f.name, { int: true }) : values[f.name];
  return out;
}

async function main(values) {
  holdYoungGeneration(); // before the gateway's modules load (lib/heap.js)
  const { loadConfig, startProblems } = require('./config');
  const { createLogger, closeLogger } = require('../lib/logger');
  // Kept for SIGHUP: a reload reads the same file, the environment and the same flags again.
  const source = {
    file: values.config,
    overrides: overridesOf(values),
  };
  const config = loadConfig(source);
  const refused = startProblems(config, { embeddedBackend: Boolean(values['embedded-backend']) });
  if (refused.length > 0) throw new OperatorError(refused.join('\n'));
  applyMemorySettings(config.memory);
  const log = createLogger({ component: 'gateway', ...config.log });
  // A handler module's escaped error costs its route a log line, never the process (ops/process-guard.js).
  require('./ops/process-guard').guardProcess(log);
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
    await closeLogger(log); // the file keeps its last lines: the stop, and the connection summaries written at it
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
      next = loadConfig({ ...source, fresh: true }); // handler modules read from disk again
      if (next.backend.url === null && sim) next.backend.url = sim.url;
      // What a start would refuse (a log file that cannot be written, nothing to ask), a reload refuses too.
      const refused = startProblems(next, { embeddedBackend: sim !== null });
      if (refused.length > 0) throw new OperatorError(refused.join('; '));
    } catch (err) {
      log.error(`reload refused, the running configuration stays in force: ${err.message}`);
      running.reloadRefused(err.message);
      return;
    }
    // With workers the reload is asynchronous: it reports itself (gateway/ops/generations.js).
    Promise.resolve(running.reload(next)).catch((err) => log.error(`reload failed: ${err.message}`));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', reload);
  // SIGUSR2: replace the running code without a gap in routing (gateway/ops/cluster.js).
  process.on('SIGUSR2', () => {
    if (running === null || stopSignal !== null) return;
    if (running.restartWorkers) {
      running.restartWorkers().catch((err) => log.error(`rolling restart failed: ${err.message}`));
      return;
    }
    log.warn('SIGUSR2 asks for a rolling restart, which needs --workers 2 or more (the primary keeps the port while workers are replaced); '
      + 'this gateway is one process: restart it (with ged145.socket, a router waits in the socket\'s backlog meanwhile), '
      + 'or restart router sides A and B on their two hosts one at a time (docs/deploy.md)');
  });
  if (config.backend.url === null && !values['embedded-backend']) {
    const own = [...config.compiledRoutes].filter(([, r]) => r.kind !== 'contract').map(([subtype]) => subtype);
    log.warn(`backend.url is not set: only subtypes ${own.join(', ')} have a backend; the router gets E_AG_HOST_ERROR1 for any other`);
  } else if (config.backend.url === null) {
    const { startRestSim } = require('../rest-sim/server'); // only here: production never loads the simulator
    sim = await startRestSim({ port: 0, host: '127.0.0.1' });
    config.backend.url = sim.url;
    log.warn(`no backend configured: serving from the built-in REST simulator at ${sim.url}; `
      + 'its answers are test data (set --backend URL or backend.url for a real backend)');
  }
  // Socket activation (ged145.socket): the router port is the socket systemd passed, not host and port.
  const inherited = require('./ops/listen-fds').inheritedSocket();
  const listenFd = inherited === null ? null : inherited.fd;
  running = config.workers > 1
    ? await require('./ops/cluster').startCluster(config, { log, listenFd }) : await require('./index').startGateway(config, { log, listenFd });
  if (stopSignal !== null) {
    await stop(stopSignal);
    return;
  }
  if (values['ready-json']) {
    require('../lib/child').announceReady({
      ready: 'gateway', host: config.host, port: running.port, adminPort: running.adminPort, workers: config.workers, backend: config.backend.url,
    });
  }
  if (sim) {
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    log.info(`next, in another terminal: npx ged145 router --host ${host} --port ${running.port} --rate 200 --duration 5`);
  }
  if (reloadWaiting) reload();
}

module.exports = { summary, usage, options, main };
