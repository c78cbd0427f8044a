'use strict';

const summary = 'test suites: speed, error, load, soak, capacity, all';
const usage = 'usage: ged145 run <suite> [options]\n';
const options = {};
const positionals = true;

async function main() {
  const e = new Error('the test runner is not built yet');
  e.expected = true;
  throw e;
}

module.exports = { summary, usage, options, positionals, main };
