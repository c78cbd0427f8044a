'use strict';

// `ged145 config schema` prints the configuration's JSON Schema (point a config file's "$schema"
// at a saved copy for completion and checking in an editor); `ged145 config check FILE` reads
// FILE as the gateway would at start, environment included, and prints every problem, one line
// each, naming the key (exit 1), or that it is fine (exit 0); `ged145 config prometheus-rules
// [FILE]` prints the Prometheus rules (or their promtool unit tests) for FILE's objectives.

const { UsageError, CODES } = require('../../lib/errors');

const summary = 'print the config file\'s JSON Schema, check a config file as the gateway would, or print its Prometheus rules';
const usage = `usage: ged145 config schema          print the JSON Schema of the gateway's config file
       ged145 config check FILE      check FILE (and the GED145_* environment) as a start would; exit 1 on a problem
       ged145 config prometheus-rules [FILE] [--by LABELS] [--runbook-url URL] [--unit-tests RULES]
                                     print the Prometheus rules for FILE's objectives (slo), or for the
                                     default configuration without FILE: recording rules and alerts

  --by LABELS          labels to keep apart, comma-separated (a site, a job); default: every
                       instance and site summed per objective
  --runbook-url URL    the page with the alerts' runbook sections (default: this ged145's docs/reports.md)
  --unit-tests RULES   print instead a promtool unit test file for those rules, RULES being the
                       rules file's path from the test file (promtool test rules TESTFILE)
`;
const options = {
  by: { type: 'string' },
  'runbook-url': { type: 'string' },
  'unit-tests': { type: 'string' },
};

/** prometheus-rules' settings from its flags. */
function rulesSettings(values) {
  const by = values.by === undefined ? [] : values.by.split(',').map((l) => l.trim()).filter((l) => l !== '');
  const { groupingProblem } = require('./prometheus-rules');
  const problem = groupingProblem(by);
  if (problem !== null) throw new UsageError(`--by: ${problem}`);
  const settings = { by };
  if (values['runbook-url'] !== undefined) {
    if (!URL.canParse(values['runbook-url'])) throw new UsageError(`--runbook-url must be a URL, got '${values['runbook-url']}'`);
    settings.runbookUrl = values['runbook-url'];
  }
  return settings;
}

async function main(values, positionals) {
  const [what, file, ...rest] = positionals;
  const flags = Object.keys(values);
  if (what !== 'prometheus-rules' && flags.length > 0) throw new UsageError(`--${flags[0]} goes with prometheus-rules only`);
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
  if (what === 'prometheus-rules' && rest.length === 0) {
    const settings = rulesSettings(values);
    const { loadConfig } = require('./index');
    const { prometheusRules, unitTests } = require('./prometheus-rules');
    const { objectivesOf } = require('./slo');
    const objectives = objectivesOf(loadConfig({ file }));
    const rulesFile = values['unit-tests'];
    process.stdout.write(rulesFile === undefined ? prometheusRules(objectives, settings) : unitTests(objectives, { ...settings, rulesFile }));
    return;
  }
  throw new UsageError(what === undefined ? 'config: schema, check FILE or prometheus-rules [FILE]?'
    : `config: unknown '${positionals.join(' ')}' (schema, check FILE, or prometheus-rules [FILE])`);
}

module.exports = {
  summary, usage, options, main, positionals: true,
};
