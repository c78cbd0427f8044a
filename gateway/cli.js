'use strict';

const { holdYoungGeneration, applyMemorySettings } = require('../lib/heap');
const { OperatorError } = require('../lib/errors');
const { ROUTE_KIND } = require('./route-kinds');
const { numberFlag } = require('../lib/cli-flags');

const { FLAGS, leaves } = require('./config/schema');

const summary = 'the GED-145 application gateway host (answers ICM routers from a REST backend)';

/** Flags that are not config keys. */
const OWN_FLAGS = [
  { name: 'config', arg: 'FILE', help: 'JSON config file (see docs/configuration.md; `ged145 config schema` for editors)' },
  { name: 'embedded-backend', arg: null, help: 'with no backend configured, serve from a built-in REST simulator; listen on 127.0.0.1 unless a host is set' },
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

/**
 * The gateway process around its runtime (ProcessRuntime, gateway/index.js, or ClusterPrimary,
 * gateway/ops/cluster.js: the same five calls, gateway/ops/runtime.js): the signals, and the
 * configuration a SIGHUP reads again. Signal handlers come before anything starts: without one, a
 * SIGHUP during the start (an operator, logrotate) would kill the process, Node's default; a
 * SIGTERM then waits for the start to end.
 */
class GatewayProcess {
  constructor(source, log, { embeddedBackend }) {
    this.source = source; // kept for SIGHUP: the same file, the environment and the same flags again
    this.log = log;
    this.embeddedBackend = embeddedBackend;
    this.sim = null;
    this.running = null; // the runtime, once started
    this.stopSignal = null;
    this.reloadWaiting = false;
    this.stopping = false;
  }

  listen() {
    process.once('SIGTERM', () => this.stop('SIGTERM'));
    process.once('SIGINT', () => this.stop('SIGINT'));
    process.on('SIGHUP', () => this.reload());
    // SIGUSR2: replace the running code without a gap in routing (gateway/ops/cluster.js).
    process.on('SIGUSR2', () => {
      if (this.running === null || this.stopSignal !== null) return;
      this.running.restart().catch((err) => this.log.error(`rolling restart failed: ${err.message}`));
    });
  }

  async stop(signal) {
    if (this.stopSignal === null) this.stopSignal = signal;
    if (this.running === null || this.stopping) return; // still starting: stopped as soon as it has started
    this.stopping = true;
    await this.running.stop(this.stopSignal);
    if (this.sim) await this.sim.close();
    await require('../lib/logger').closeLogger(this.log); // the file keeps its last lines: the stop, and the connection summaries written at it
    process.exit(0);
  }

  reload() {
    if (this.stopSignal !== null) return;
    if (this.running === null) {
      this.reloadWaiting = true; // applied once the start is over
      return;
    }
    const { loadConfig, startProblems } = require('./config');
    let next;
    try {
      next = loadConfig({ ...this.source, fresh: true }); // handler modules read from disk again
      if (next.backend.url === null && this.sim) next.backend.url = this.sim.url;
      // What a start would refuse (a log file that cannot be written, nothing to ask), a reload refuses too.
      const refused = startProblems(next, { embeddedBackend: this.sim !== null });
      if (refused.length > 0) throw new OperatorError(refused.join('; '));
    } catch (err) {
      this.log.error(`reload refused, the running configuration stays in force: ${err.message}`);
      this.running.refused(err.message);
      return;
    }
    // With workers the reload is asynchronous: it reports itself (gateway/ops/generations.js).
    this.running.reload(next);
  }

  /** No backend configured: a warning, or with --embedded-backend the built-in REST simulator. */
  async backendOrSimulator(config) {
    const { log } = this;
    if (config.backend.url !== null) return;
    if (!this.embeddedBackend) {
      const own = [...config.compiledRoutes].filter(([, r]) => r.kind !== ROUTE_KIND.CONTRACT).map(([subtype]) => subtype);
      log.warn(`backend.url is not set: only subtypes ${own.join(', ')} have a backend; the router gets E_AG_HOST_ERROR1 for any other`);
      return;
    }
    const { startRestSim } = require('../rest-sim/server'); // only here: production never loads the simulator
    this.sim = await startRestSim({ port: 0, host: '127.0.0.1' });
    config.backend.url = this.sim.url;
    log.warn(`no backend configured: serving from the built-in REST simulator at ${this.sim.url}; `
      + 'its answers are test data (set --backend URL or backend.url for a real backend)');
  }

  /** config is not kept: the runtime has the running one (a reload replaces it and its handler modules). */
  async start(config, readyJson) {
    const { log } = this;
    // Socket activation (ged145.socket): the router port is the socket systemd passed, not host and port.
    const inherited = require('./ops/listen-fds').inheritedSocket();
    log.info(startLine(config, inherited));
    await this.backendOrSimulator(config);
    const options = { log, listenFd: inherited === null ? null : inherited.fd };
    this.running = config.workers > 1
      ? await require('./ops/cluster').startCluster(config, options) : await require('./index').startGateway(config, options);
    if (this.stopSignal !== null) {
      await this.stop(this.stopSignal);
      return;
    }
    if (readyJson) {
      require('../lib/child').announceReady({
        ready: 'gateway', host: config.host, port: this.running.port, adminPort: this.running.adminPort, workers: config.workers, backend: config.backend.url,
      });
    }
    if (this.sim) {
      const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
      log.info(`next, in another terminal: npx ged145 router --host ${host} --port ${this.running.port} --rate 200 --duration 5`);
    }
    if (this.reloadWaiting) this.reload();
  }
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * The first line a gateway logs: where routers connect, before the warm-up and the backend
 * delay the listener, so that an operator sees at once whether other hosts can reach it.
 */
function startLine(config, inherited) {
  const { version } = require('../package.json');
  const at = (host, port) => `${host.includes(':') ? `[${host}]` : host}${port === 0 ? ' on a free port' : `:${port}`}`;
  const { host } = config;
  let where = `on ${at(host, config.port)} for routers${config.tls.cert ? ' (TLS)' : ''}`;
  if (inherited !== null) where = `for routers on the socket the service manager passed (fd ${inherited.fd})`;
  else if (host === '0.0.0.0' || host === '::') where += ' (every address)';
  else if (LOOPBACK.has(host)) where += ' (this host only; --host 0.0.0.0 for routers on other hosts)';
  const admin = config.admin.port === null ? 'no admin port' : `admin on ${at(config.admin.host, config.admin.port)}`;
  return `ged145 gateway ${version} starting, to listen ${where}; ${admin}`;
}

async function main(values) {
  holdYoungGeneration(); // before the gateway's modules load (lib/heap.js)
  const { loadConfig, startProblems } = require('./config');
  const { createLogger } = require('../lib/logger');
  const embeddedBackend = Boolean(values['embedded-backend']);
  // A trial with test data listens on this host only, unless the host is set (file, environment or flag).
  const source = { file: values.config, overrides: overridesOf(values), defaults: embeddedBackend ? { host: '127.0.0.1' } : {} };
  const config = loadConfig(source);
  const refused = startProblems(config, { embeddedBackend });
  if (refused.length > 0) throw new OperatorError(refused.join('\n'));
  applyMemorySettings(config.memory);
  const log = createLogger({ component: 'gateway', ...config.log });
  // A handler module's escaped error costs its route a log line, never the process (ops/process-guard.js).
  require('./ops/process-guard').guardProcess(log);
  const gatewayProcess = new GatewayProcess(source, log, { embeddedBackend });
  gatewayProcess.listen();
  await gatewayProcess.start(config, values['ready-json']);
}

module.exports = { summary, usage, options, main };
