'use strict';

// runSuites(names, options): starts (or targets) a gateway, runs the suites in order, returns
// their results; writes the JSON and HTML reports when asked.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSystem } = require('./processes');
const { speed } = require('./suites/speed');
const { error } = require('./suites/error');
const { load } = require('./suites/load');
const { soak } = require('./suites/soak');
const { capacity } = require('./suites/capacity');
const { outage, OUTAGE_CONFIG } = require('./suites/outage');
const { htmlReport } = require('./report/html');

const SUITES = {
  speed, error, load, soak, capacity, outage,
};
/** `all`: what a demo or a smoke test wants, in under a minute. */
const ALL = [['speed', {}], ['error', { durationS: 15 }], ['load', { durationS: 10 }]];

function plan(name, options) {
  if (name === 'all') return ALL.map(([n, o]) => [n, { ...o, ...options }]);
  if (!SUITES[name]) throw new RangeError(`unknown suite '${name}' (${Object.keys(SUITES).join(', ')}, all)`);
  return [[name, options]];
}

/**
 * options: {suite options..., target: {host, port}, pid, engine, seed, monitorWith, progress, log}
 */
async function runSuites(name, options = {}) {
  const steps = plan(name, options.suite || {});
  let system = null;
  let ctx;
  let scratch = null;
  if (options.target) {
    ctx = { target: options.target, monitorTargets: options.pid ? [{ name: 'gateway', pid: options.pid }] : [] };
  } else {
    const gatewayArgs = [];
    if (steps.some(([suite]) => suite === 'outage')) {
      // The outage suite's gateway keeps calls routing: an answer cache and a fallback answer.
      scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-run-'));
      fs.writeFileSync(path.join(scratch, 'gateway.json'), JSON.stringify(OUTAGE_CONFIG));
      gatewayArgs.push('--config', path.join(scratch, 'gateway.json'));
    }
    try {
      system = await startSystem({ engine: options.engine, gatewayArgs });
    } finally {
      if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
    }
    ctx = { target: system.target, system, monitorTargets: Object.entries(system.pids).map(([n, pid]) => ({ name: n, pid })) };
  }
  Object.assign(ctx, { seed: options.seed, monitorWith: options.monitorWith || 'pidstat', progress: options.progress });
  const results = [];
  try {
    for (const [suite, opts] of steps) {
      if (options.log) options.log(`running ${suite}...`);
      results.push(await SUITES[suite](ctx, opts));
    }
  } finally {
    if (system) {
      const { gatewayExit } = await system.stop();
      if (gatewayExit !== 0 && options.log) options.log(`gateway exited with ${gatewayExit}`);
    }
  }
  return {
    results,
    meta: {
      date: new Date().toISOString(),
      target: system
        ? `child processes (gateway ${system.target.host}:${system.target.port}, engine ${options.engine || 'undici'})`
        : `${options.target.host}:${options.target.port}`,
      machine: `${os.cpus().length} cores, ${os.cpus()[0] ? os.cpus()[0].model : ''}, Node ${process.version}`,
    },
  };
}

function writeJson(file, run) {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(run, null, 2)}\n`);
}

function writeHtml(file, run, title) {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  fs.writeFileSync(file, htmlReport(run.results, { title, meta: run.meta }));
}

module.exports = { runSuites, writeJson, writeHtml, SUITES: [...Object.keys(SUITES), 'all'] };
