'use strict';

// Shared output for the bench scripts: an aligned table on stdout and a JSON file per bench.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

function fmt(v) {
  if (typeof v === 'number') return Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(2);
  return String(v);
}

function table(headers, rows) {
  const cells = [headers, ...rows.map((r) => r.map(fmt))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return `${[line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n')}\n`;
}

function machine() {
  return { cores: os.cpus().length, cpu: os.cpus()[0] && os.cpus()[0].model, node: process.version, date: new Date().toISOString() };
}

function writeResult(name, data) {
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify({ bench: name, machine: machine(), ...data }, null, 2)}\n`);
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
}

module.exports = { table, writeResult, machine };
