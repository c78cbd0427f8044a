'use strict';

// Reliability figures for docs/reliability.md: each scenario records what it measured; the
// stress run prints the whole set once at the end, and writes it to GED145_RELIABILITY_JSON
// when that names a file (tests write nothing into the tree unless asked).

const fs = require('node:fs');
const path = require('node:path');

const figures = {};

function record(scenario, data) {
  figures[scenario] = data;
}

after(function writeFigures() {
  if (Object.keys(figures).length === 0) return;
  const file = process.env.GED145_RELIABILITY_JSON;
  if (file) {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
  }
  if (process.env.GED145_STRESS === '1') process.stdout.write(`\nreliability figures:\n${JSON.stringify(figures, null, 2)}\n`);
});

module.exports = { record, figures };
