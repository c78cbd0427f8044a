'use strict';

// ESLint (flat config): the recommended rules, a line length, and the habits STYLE.md asks for.
// `npm run lint`; .ci/run runs it.

const path = require('node:path');
const js = require('@eslint/js');
const globals = require('globals');
const n = require('eslint-plugin-n');

// Which way the parts depend (README, "Folders"). A require is matched by the file it resolves to.
const at = (p) => path.join(__dirname, p);
const NOT_PRODUCT = {
  name: [at('simulator/**'), at('runner/**'), at('bench/**'), at('tests/**')],
  message: 'the product never depends on the simulator, the runner, the benches or the tests.',
};
const QUERY_PATH_NO_CONFIG = { name: [at('gateway/config/**')], message: 'the query path gets compiled settings, never the config loader.' };
const NO_OPS = { name: [at('gateway/ops/**')], message: 'ops/ (admin, metrics, cluster, warm-up) sits above the query path, not below it.' };
const NO_SESSION = { name: [at('gateway/session/**')], message: 'only the server and ops/ know router sessions.' };
const LIB_ALONE = { name: [at('gateway/**'), at('rest-sim/**')], message: 'lib/ is shared by every component and depends on none.' };
const boundaries = (...rules) => ({ 'n/no-restricted-require': ['error', [NOT_PRODUCT, ...rules]] });

module.exports = [
  { ignores: ['node_modules/', 'reports/', 'bench/results/', 'tools/wireshark/', 'gateway/config/validator.generated.js'] },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'commonjs',
      globals: { ...globals.node },
    },
    rules: {
      'max-len': ['error', { code: 160, ignoreUrls: true, ignoreRegExpLiterals: true }],
      'no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-console': 'error',
      'prefer-const': 'error',
      'no-var': 'error',
      eqeqeq: ['error', 'always'],
      strict: ['error', 'global'],
      // The protocol is about bytes: ASCII and control-character classes in regexps are the point.
      'no-control-regex': 'off',
    },
  },
  { plugins: { n } },
  { files: ['gateway/**/*.js', 'lib/**/*.js', 'rest-sim/**/*.js'], rules: boundaries() },
  { files: ['lib/**/*.js'], rules: boundaries(LIB_ALONE) },
  {
    files: ['lib/protocol/**/*.js'],
    rules: boundaries(LIB_ALONE, {
      name: [at('lib/**'), `!${at('lib/protocol/**')}`], message: 'lib/protocol/ is the codec, publishable alone: it requires nothing outside itself.',
    }),
  },
  {
    // session/ reaches the backend side only through its entry and its outcome module.
    files: ['gateway/session/**/*.js'],
    rules: boundaries(QUERY_PATH_NO_CONFIG, NO_OPS, {
      name: [at('gateway/backend/**'), `!${at('gateway/backend/index.js')}`, `!${at('gateway/backend/outcome.js')}`],
      message: 'session/ reaches backend/ only through backend/index.js and backend/outcome.js.',
    }),
  },
  {
    files: ['gateway/backend/**/*.js'],
    rules: boundaries(QUERY_PATH_NO_CONFIG, NO_OPS, NO_SESSION, {
      name: [at('gateway/answer/**')], message: 'backend/ hands answers on as the backend gave them; only answer/ knows what GED-145 can carry.',
    }),
  },
  {
    files: ['gateway/answer/**/*.js'],
    rules: boundaries(QUERY_PATH_NO_CONFIG, NO_OPS, NO_SESSION, {
      name: [at('gateway/backend/**')], message: 'answer/ is a leaf: answers as GED-145 carries them.',
    }),
  },
  { files: ['gateway/config/**/*.js'], rules: boundaries(NO_OPS, NO_SESSION) },
  {
    files: ['tests/**/*.js', 'eslint.config.js'],
    languageOptions: { globals: { ...globals.node, ...globals.mocha } },
  },
  {
    // The HTML report's and the status page's scripts run in the browser.
    files: ['runner/report/page/**/*.js', 'gateway/ops/page/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
];
