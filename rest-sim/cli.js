'use strict';

const { startRestSim } = require('./server');
const { createLogger } = require('../lib/logger');
const { UsageError, OperatorError } = require('../lib/errors');
const { numberFlag } = require('../lib/cli-flags');

const summary = 'REST backend simulator with fault injection';
const usage = `usage: ged145 rest-sim [options]

  --port N             port to listen on (default 3000; 0 = any free port)
  --host ADDR          address to listen on (default 127.0.0.1)
  --latency MS         added latency, mean (default 0)
  --latency-spread MS  spread around the mean (default 0)
  --latency-dist D     fixed | uniform | normal (default fixed)
  --error-rate R       share of requests answered HTTP 500 (0..1)
  --reset-rate R       share of connections reset without an answer (0..1)
  --hang-rate R        share of requests never answered (0..1)
  --customers N        synthetic customers to generate (default 10000)
  --seed N             seed for customers and fault draws (default 145)
  --ready-json         once listening, print {"ready": "rest-sim", "url", "port"} on stdout

Faults change at run time: PUT /admin/faults {"latency": 20, "errorRate": 0.1}.
`;

const options = {
  port: { type: 'string', default: '3000' },
  host: { type: 'string', default: '127.0.0.1' },
  latency: { type: 'string', default: '0' },
  'latency-spread': { type: 'string', default: '0' },
  'latency-dist': { type: 'string', default: 'fixed' },
  'error-rate': { type: 'string', default: '0' },
  'reset-rate': { type: 'string', default: '0' },
  'hang-rate': { type: 'string', default: '0' },
  customers: { type: 'string', default: '10000' },
  seed: { type: 'string', default: '145' },
  'ready-json': { type: 'boolean' },
};

const number = (values, key) => numberFlag(values, key);

async function main(values) {
  const log = createLogger({ component: 'rest-sim' });
  let sim;
  try {
    sim = await startRestSim({
      port: number(values, 'port'),
      host: values.host,
      customers: number(values, 'customers'),
      seed: number(values, 'seed'),
      faults: {
        latency: number(values, 'latency'),
        latencySpread: number(values, 'latency-spread'),
        latencyDist: values['latency-dist'],
        errorRate: number(values, 'error-rate'),
        resetRate: number(values, 'reset-rate'),
        hangRate: number(values, 'hang-rate'),
      },
    });
  } catch (err) {
    if (err instanceof RangeError) throw new UsageError(err.message);
    if (err.code === 'EADDRINUSE') throw new OperatorError(`port ${values.port} on ${values.host} is already in use`);
    throw err;
  }
  log.info(`listening on ${sim.url}`, { customers: sim.state.customers.count, faults: sim.state.faults.settings });
  if (values['ready-json']) require('../lib/child').announceReady({ ready: 'rest-sim', url: sim.url, port: Number(new URL(sim.url).port) });
  const stop = (signal) => {
    log.info(`${signal}: stopping`);
    sim.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

module.exports = { summary, usage, options, main };
