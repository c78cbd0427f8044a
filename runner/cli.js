'use strict';

const { ENGINE_NAMES } = require('../gateway/backend/engines');
const path = require('node:path');
const { runSuites, writeJson, writeHtml, SUITES } = require('./index');
const { consoleReport } = require('./report/console');
const { UsageError } = require('../lib/errors');
const { closest } = require('../lib/closest');
const { numberFlag } = require('../lib/cli-flags');

const summary = 'test suites against a gateway: speed, error, load, soak, capacity, outage, all';
const usage = `usage: ged145 run <suite> [options]

suites:
  speed      N sequential heartbeats, then N sequential queries (--count, default 10)
  error      fragmented writes and invalid frames for --duration (default 60 s)
  load       --rate queries/s for --duration, no faults (default 500/s for 20 s)
  soak       a long load with the gateway's CPU and RSS sampled every second (default 1000/s, 600 s)
  capacity   raise the rate by --step every --step-duration until p99 > --budget ms or errors
  outage     --rate queries/s while the REST simulator goes slow, then down, then back (default
             200/s for 40 s); the gateway runs with a cache and a fallback; answers by outcome over time
  all        speed, a 15 s error run and a 10 s load: a demo or a smoke test

options:
  --duration S        run length in seconds
  --rate N            queries/s (load, soak, outage; capacity's first step)
  --count N           transactions for speed (default 10)
  --step N            capacity: rate increase per step (default 500)
  --step-duration S   capacity: seconds per step (default 10)
  --budget MS         capacity: p99 budget (default 50)
  --invalid-rate R    error: share of queries preceded by an invalid frame (default 0.15)
  --target HOST:PORT  run against a gateway that is already running (default: start
                      rest-sim and the gateway as child processes on free ports)
  --pid PID           with --target: the gateway process to monitor
  --engine NAME       undici | axios, for the gateway the runner starts
  --monitor M         pidstat (default, when installed) | proc
  --json FILE         every figure as JSON
  --html FILE         the HTML report (default reports/<suite>-<time>.html)
  --no-html           no HTML report
  --no-progress       no progress bar
  --seed N            seed for the query mix and injection
`;

const options = {
  duration: { type: 'string' },
  rate: { type: 'string' },
  count: { type: 'string' },
  step: { type: 'string' },
  'step-duration': { type: 'string' },
  budget: { type: 'string' },
  'invalid-rate': { type: 'string' },
  target: { type: 'string' },
  pid: { type: 'string' },
  engine: { type: 'string' },
  monitor: { type: 'string' },
  json: { type: 'string' },
  html: { type: 'string' },
  'no-html': { type: 'boolean' },
  'no-progress': { type: 'boolean' },
  seed: { type: 'string' },
};
const positionals = true;

const num = (values, key, int = false) => numberFlag(values, key, { int, positive: true });

function progressBars(enabled) {
  if (!enabled) return undefined;
  const cliProgress = require('cli-progress');
  return (title) => {
    const bar = new cliProgress.SingleBar({
      format: `  ${title.padEnd(9)} [{bar}] {percentage}% {label}`, stream: process.stderr, hideCursor: true, clearOnComplete: true,
    }, cliProgress.Presets.shades_classic);
    bar.start(100, 0, { label: '' });
    return {
      update: (f, label = '') => bar.update(Math.min(100, Math.round(f * 100)), { label }),
      stop: () => bar.stop(),
    };
  };
}

async function main(values, positionalArgs) {
  if (positionalArgs.length !== 1) throw new UsageError('give exactly one suite');
  const [suite] = positionalArgs;
  if (!SUITES.includes(suite)) {
    const guess = closest(suite, SUITES);
    throw new UsageError(`unknown suite '${suite}'${guess ? ` (did you mean '${guess}'?)` : `; suites: ${SUITES.join(', ')}`}`);
  }
  let target;
  if (values.target) {
    const m = /^([^:]+):(\d+)$/.exec(values.target);
    if (!m) throw new UsageError('--target takes HOST:PORT');
    target = { host: m[1], port: Number(m[2]) };
  } else if (values.pid) throw new UsageError('--pid goes with --target');
  if (target && suite === 'outage') throw new UsageError('outage starts its own REST simulator and gateway: it takes no --target');
  if (values.monitor && !['pidstat', 'proc'].includes(values.monitor)) throw new UsageError('--monitor takes pidstat or proc');
  if (values.engine && !ENGINE_NAMES.includes(values.engine)) throw new UsageError(`--engine takes ${ENGINE_NAMES.join(' or ')}`);
  const suiteOptions = {};
  const set = (k, v) => { if (v !== undefined) suiteOptions[k] = v; };
  set('durationS', num(values, 'duration'));
  set('rate', num(values, 'rate'));
  set('count', num(values, 'count', true));
  set('step', num(values, 'step'));
  set('stepS', num(values, 'step-duration'));
  set('budgetMs', num(values, 'budget'));
  set('invalidRate', num(values, 'invalid-rate'));
  if (suite === 'capacity' && suiteOptions.rate) suiteOptions.start = suiteOptions.rate;
  const log = (line) => process.stderr.write(`${line}\n`);
  const run = await runSuites(suite, {
    suite: suiteOptions,
    target,
    pid: values.pid ? Number(values.pid) : undefined,
    engine: values.engine,
    seed: values.seed ? Number(values.seed) : undefined,
    monitorWith: values.monitor === 'proc' ? '/proc' : 'pidstat',
    progress: progressBars(!values['no-progress'] && process.stderr.isTTY),
    log,
  });
  process.stdout.write(`\n${consoleReport(run.results)}`);
  if (values.json) {
    writeJson(values.json, run);
    process.stdout.write(`JSON report: ${values.json}\n`);
  }
  if (!values['no-html']) {
    const file = values.html || path.join('reports', `${suite}-${run.meta.date.replace(/[:.]/g, '-')}.html`);
    writeHtml(file, run, `ged145 ${suite} run, ${run.meta.date}`);
    process.stdout.write(`HTML report: ${path.resolve(file)}\n`);
  }
  process.exitCode = run.results.every((r) => r.verdict.pass) ? 0 : 1;
}

module.exports = { summary, usage, options, positionals, main };
