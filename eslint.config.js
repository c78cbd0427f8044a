'use strict';

// ESLint (flat config): the recommended rules, a line length, and the habits STYLE.md asks for.
// `npm run lint`; .ci/run runs it.

const js = require('@eslint/js');
const globals = require('globals');

module.exports = [
  { ignores: ['node_modules/', 'reports/', 'bench/results/', 'tools/wireshark/'] },
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
  {
    files: ['tests/**/*.js', 'eslint.config.js'],
    languageOptions: { globals: { ...globals.node, ...globals.mocha } },
  },
  {
    // The HTML report's page script runs in the browser.
    files: ['runner/report/page/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
];
