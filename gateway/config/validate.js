'use strict';

// The schema's verdict on a layered configuration, as the operator reads it: one line per
// problem, naming the key ("limits.maxInFlight must be an integer from 1 to 100000"), with
// "did you mean" for a misspelt key and what replaced a retired one. ajv (as fastify uses it)
// does the checking, with the schema compiled ahead of time (validator-build.js); this turns its
// errors into those lines.

const vm = require('node:vm');
const { closest } = require('../../lib/closest');
const { readTextInPieces } = require('../../lib/files');

const VALIDATOR = require.resolve('./validator.generated');

/**
 * The compiled schema, loaded for one verdict and let go after it. Its 400 KB of generated code
 * runs once at a start, a reload or `ged145 config check`; kept in the module cache, its source and
 * bytecode stayed in the heap for the life of the process (1.4 MB of idle RSS, docs/performance.md,
 * "Memory"). It is compiled as Node compiles a CommonJS file (it is ours, generated, and requires
 * only ajv's ucs2length helper), and that helper is required by this file, so that no module it
 * loads keeps it as a parent; its text is read in pieces (lib/files.js says why). About 2 ms a call.
 */
function loadValidator() {
  const wrapper = vm.compileFunction(readTextInPieces(VALIDATOR), ['exports', 'require', 'module'], { filename: VALIDATOR });
  const module = { exports: {} };
  wrapper(module.exports, require, module);
  return module.exports;
}

/** Keys an earlier version took (by their last two segments, so a route's breaker is covered too), and what replaced them. */
const RETIRED = Object.freeze({
  'breaker.consecutiveFailures': 'the circuit opens on a failure ratio (failureRatio, minimumCalls, windowMs; docs/configuration.md)',
});

const keyOf = (instancePath) => instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).join('.');
const shown = (v) => (v === undefined ? 'nothing' : JSON.stringify(v));

/** What a value must be, from its schema node. */
function mustBe(node, value) {
  if (node['x-must']) return node['x-must'].replace('{value}', shown(value));
  const types = [].concat(node.type || []);
  if (node.enum) return `must be one of ${node.enum.join(', ')}`;
  if (types.includes('integer') && node.minimum !== undefined && node.maximum !== undefined) {
    return `must be an integer from ${node.minimum} to ${node.maximum}${types.includes('null') ? ', or null' : ''}`;
  }
  if (types[0] === 'object' && node.properties !== undefined) return `must be an object of settings, not ${shown(value)}`;
  if (types[0] === 'boolean') return 'must be true or false';
  if (types[0] === 'string') return 'must be a string';
  if (types[0] === 'object') return 'must be an object';
  if (types[0] === 'array') return 'must be a list';
  return `must be ${types.join(' or ')}`;
}

/**
 * The problems of config c: [] when the schema accepts it, else one line per problem.
 * sources: dotted key -> "GED145_PORT=70000", for a value the environment set.
 */
function schemaProblems(c, sources = {}) {
  const validate = loadValidator();
  if (validate(c)) return [];
  const lines = [];
  const seen = new Set();
  for (const e of validate.errors) {
    // A branch's verdict (if/then/else) is said by the error inside it; a property name's, by propertyNames.
    if (e.keyword === 'if' || e.propertyName !== undefined) continue;
    if (e.keyword === 'propertyNames' && e.parentSchema['x-kind']) {
      // A key the route's kind does not take (schema.js, ROUTE): "routes.x: unknown key 'url'".
      const key = keyOf(e.instancePath);
      const name = e.params.propertyName;
      const guess = closest(name, e.parentSchema.propertyNames.enum);
      lines.push(`${key}: unknown key '${name}' in ${e.parentSchema['x-kind']}${guess ? ` (did you mean '${guess}'?)` : ''}`);
      continue;
    }
    if (e.keyword === 'additionalProperties') {
      const parent = keyOf(e.instancePath);
      const key = parent === '' ? e.params.additionalProperty : `${parent}.${e.params.additionalProperty}`;
      const retired = Object.keys(RETIRED).find((r) => key === r || key.endsWith(`.${r}`));
      if (retired) {
        lines.push(`${key} is gone: ${RETIRED[retired]}`);
        continue;
      }
      const guess = closest(e.params.additionalProperty, Object.keys(e.parentSchema.properties || {}));
      lines.push(`unknown key '${key}'${guess ? ` (did you mean '${parent === '' ? '' : `${parent}.`}${guess}'?)` : ''}`);
      continue;
    }
    const key = keyOf(e.instancePath);
    // One line per key: a value of the wrong type also fails its range, its enum, its items.
    if ([...seen].some((k) => key === k || key.startsWith(`${k}.`))) continue;
    seen.add(key);
    const node = e.parentSchema;
    const what = e.keyword === 'propertyNames' ? `has a key ${shown(e.params.propertyName)}: ${mustBe(node)}` : mustBe(node, e.data);
    lines.push(`${key} ${what}${sources[key] ? ` (from ${sources[key]})` : ''}`);
  }
  return lines;
}

module.exports = { schemaProblems };
