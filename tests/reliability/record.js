'use strict';

// Reliability figures for docs/reliability.md: each scenario records what it measured;
// the whole set is written to reports/reliability.json and printed once at the end.

const fs = require('node:fs');
const path = require('node:path');

const figures = {};

function record(scenario, data) {
  figures[scenario] = data;
}

after(function writeFigures() { // eslint-disable-line no-undef
  if (Object.keys(figures).length === 0) return;
  const dir = path.join(__dirname, '..', '..', 'reports');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'reliability.json'), `${JSON.stringify(figures, null, 2)}\n`);
  if (process.env.GED145_STRESS === '1') process.stdout.write(`\nreliability figures:\n${JSON.stringify(figures, null, 2)}\n`);
});

module.exports = { record, figures };
