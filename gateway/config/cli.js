'use strict';

// `ged145 config schema` prints the configuration's JSON Schema (point a config file's "$schema"
// at a saved copy for completion and checking in an editor); `ged145 config check FILE` reads
// FILE as the gateway would at start, environment included, and prints every problem, one line
// each, naming the key (exit 1), or that it is fine (exit 0).

const { UsageError, CODES } = require('../../lib/errors');

const summary = 'print the config file\'s JSON Schema, or check a config file as the gateway would';
const usage = `usage: ged145 config schema          print the JSON Schema of the gateway's config file
       ged145 config check FILE      check FILE (and the GED145_* environment) as a start would; exit 1 on a problem
       ged145 config prometheus-rules FILE
                                     print the Prometheus rules for FILE's objectives (slo): recording rules and alerts
`;
const options = {};

async function main(values, positionals) {
  const [what, file, ...rest] = positionals;
  if (what === 'schema' && file === undefined) {
    process.stdout.write(`${JSON.stringify(require('./index').configSchema(), null, 2)}\n`);
    return;
  }
  if (what === 'check' && file !== undefined && rest.length === 0) {
    const { loadConfig, startProblems, ConfigError } = require('./index');
    let config;
    try {
      config = loadConfig({ file });
      const refused = startProblems(config);
      if (refused.length > 0) throw new ConfigError(refused);
    } catch (err) {
      let problems;
      if (err instanceof ConfigError) problems = err.problems;
      // Unreadable or not JSON: "config: FILE is not valid JSON: ..." is said as the other lines are.
      else if (err.code === CODES.OPERATOR) problems = [err.message.replace(/^config: /, '').replace(`${file} is `, '')];
      else throw err;
      process.stderr.write(problems.map((p) => `${file}: ${p}\n`).join(''));
      process.exitCode = 1;
      return;
    }
    const routes = config.compiledRoutes.size;
    process.stdout.write(`${file}: ok (${routes} route${routes === 1 ? '' : 's'}; backend ${[].concat(config.backend.url ?? 'none').join(', ')})\n`);
    return;
  }
  if (what === 'prometheus-rules' && file !== undefined && rest.length === 0) {
    const { loadConfig } = require('./index');
    const { prometheusRules } = require('./prometheus-rules');
    const { objectivesOf } = require('./slo');
    process.stdout.write(prometheusRules(objectivesOf(loadConfig({ file }))));
    return;
  }
  throw new UsageError(what === undefined ? 'config: schema, check FILE or prometheus-rules FILE?'
    : `config: unknown '${positionals.join(' ')}' (schema, check FILE, or prometheus-rules FILE)`);
}

module.exports = {
  summary, usage, options, main, positionals: true,
};
