'use strict';

// One schema for the configuration (gateway/config/schema.js): `ged145 config schema` prints it,
// an independent validator (@cfworker/json-schema, not ajv) agrees with it about the documented
// example, `ged145 config check` says what a start would say, every problem at once, and
// docs/configuration.md lists exactly its keys and defaults.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Validator } = require('@cfworker/json-schema');
const { runCli, ROOT } = require('../../helpers/spawn');
const { loadConfig, ConfigError } = require('../../../gateway/config');
const {
  leaves, defaultsOf, SCHEMA, FLAGS,
} = require('../../../gateway/config/schema');
const { tmpDir } = require('../../helpers/tmp');

const EXAMPLE = path.join(ROOT, 'docs', 'examples', 'gateway.json');

describe('the configuration schema', function () {
  this.timeout(20000);

  it('`ged145 config schema` prints a draft-07 schema that another validator uses: the example passes, a misspelt key does not', async () => {
    const r = await runCli(['config', 'schema']);
    assert.equal(r.code, 0, r.err);
    const schema = JSON.parse(r.out);
    assert.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#');
    assert.ok(!/"x-(env|flag|must)"/.test(r.out), 'no private annotations in the printed schema');
    const validator = new Validator(schema, '7', false);
    const example = JSON.parse(fs.readFileSync(EXAMPLE, 'utf8'));
    assert.deepEqual(validator.validate(example).errors, []);
    example.limits.maxInFlite = 5;
    const result = validator.validate(example);
    assert.equal(result.valid, false);
    assert.ok(result.errors.some((e) => /maxInFlite/.test(e.error)), JSON.stringify(result.errors));
    // A file that names the schema for its editor is still a valid config.
    assert.equal(validator.validate({ $schema: './gateway.schema.json', port: 5001 }).valid, true);
    assert.equal(loadConfig({ env: {}, overrides: {}, file: write({ $schema: './gateway.schema.json', port: 5001 }) }).port, 5001);
  });

  it('`ged145 config check FILE`: ok with exit 0, or every problem on its own line naming the key, with did-you-mean, exit 1', async () => {
    const ok = await runCli(['config', 'check', EXAMPLE], { env: { BACKEND_TOKEN: 't' } });
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /gateway\.json: ok \(3 routes; backend http:\/\/127\.0\.0\.1:3000\)/);
    const bad = write({
      deadlinMs: 200, limits: { maxInFlight: 0 }, routes: { x: { url: 'http://h/x', metod: 'GET' } }, breaker: { consecutiveFailures: 5 },
    });
    const r = await runCli(['config', 'check', bad]);
    assert.equal(r.code, 1);
    assert.deepEqual(r.err.trim().split('\n').map((l) => l.slice(bad.length + 2)).sort(), [
      'breaker.consecutiveFailures is gone: the circuit opens on a failure ratio (failureRatio, minimumCalls, windowMs; docs/configuration.md)',
      'limits.maxInFlight must be an integer from 1 to 100000',
      "unknown key 'deadlinMs' (did you mean 'deadlineMs'?)",
      "unknown key 'routes.x.metod' (did you mean 'routes.x.method'?)",
    ]);
    // The start says the same, each line under the command's name.
    const start = await runCli(['gateway', '--config', bad]);
    assert.equal(start.code, 1);
    assert.match(start.err, /^ged145 gateway: config: unknown key 'deadlinMs' \(did you mean 'deadlineMs'\?\)$/m);
    assert.match(start.err, /^ged145 gateway: config: limits\.maxInFlight must be an integer from 1 to 100000$/m);
    assert.doesNotMatch(start.err, /\n\s+at /);
    // A file that is not JSON is one line of the same form, with where it broke.
    const broken = write('{\n  "deadlineMs": 250,\n  "limits": {,}\n}\n');
    const b = await runCli(['config', 'check', broken]);
    assert.equal(b.code, 1);
    assert.equal(b.err, `${broken}: not valid JSON: line 3, column 14 (key limits): a key in double quotes was expected\n`);
  });

  it('loadConfig throws one ConfigError with every problem, each naming its key', () => {
    let err;
    try {
      loadConfig({ env: { GED145_PORT: '70000' }, overrides: { 'log.level': 'loud', 'limits.maxSessions': 0 } });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ConfigError);
    assert.equal(err.code, 'ERR_GED145_CONFIG');
    assert.deepEqual(err.problems, [
      'port must be a port number 0..65535 (from GED145_PORT=70000)',
      'limits.maxSessions must be an integer from 1 to 10000',
      'log.level must be error, warn, info or debug',
    ]);
  });

  it('the flags and environment variables come from the schema', async () => {
    const help = (await runCli(['gateway', '--help'])).out;
    for (const f of FLAGS) assert.match(help, new RegExp(`--${f.name}\\b`), f.name);
    for (const [key, node] of leaves()) if (node['x-env']) assert.match(help, new RegExp(node['x-env']), key);
    assert.equal(loadConfig({ env: { GED145_WORKERS: '3' }, overrides: { 'backend.url': 'http://b:1' } }).workers, 3);
  });

  it('docs/configuration.md lists exactly the schema\'s keys, with its defaults', () => {
    const documented = new Map(); // key -> the default's text in the docs
    for (const row of fs.readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8').split('\n')) {
      const cells = row.split(/(?<!\\)\|/).slice(1, -1);
      if (cells.length !== 3 || !cells[0].includes('`')) continue;
      const keys = [...cells[0].matchAll(/`([^`]+)`/g)].map((m) => m[1]).filter((k) => !k.includes('<') && !k.startsWith('.'));
      const defaults = [...cells[1].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
      keys.forEach((k, i) => documented.set(k, defaults.length === keys.length ? defaults[i] : defaults[0]));
    }
    const schemaKeys = [...leaves()].map(([k]) => k);
    const missing = schemaKeys.filter((k) => !documented.has(k));
    assert.deepEqual(missing, [], 'every key of the schema has a row');
    const sections = new Set(Object.keys(SCHEMA.properties));
    const unknown = [...documented.keys()].filter((k) => !schemaKeys.includes(k) && !sections.has(k));
    assert.deepEqual(unknown, [], 'no row names a key the schema does not have');
    const nodeAt = (key) => key.split('.').reduce((node, k) => {
      const n = node.$ref ? SCHEMA.definitions[node.$ref.split('/').pop()] : node;
      return n.properties[k];
    }, SCHEMA);
    for (const [key, text] of documented) {
      if (text === undefined || text.includes('...') || !/^[[{"\d]|^(true|false|null)$/.test(text)) continue;
      assert.deepEqual(JSON.parse(text), defaultsOf(nodeAt(key)), `the documented default of ${key}`);
    }
  });
});

/** A config file of obj (a string is written as it is). */
function write(obj) {
  const file = path.join(tmpDir(), `config-${process.hrtime.bigint()}.json`);
  fs.writeFileSync(file, typeof obj === 'string' ? obj : JSON.stringify(obj));
  return file;
}
