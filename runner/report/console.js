'use strict';

// The console report: one compact, aligned block per suite.

const { fixed } = require('../../simulator/format');

function block(result) {
  const rows = [...(result.rows || [])];
  const mon = result.monitor;
  if (mon && mon.processes && result.suite !== 'soak') {
    for (const [name, p] of Object.entries(mon.processes)) {
      if (p.samples.length) rows.push([
        `${name} CPU/RSS`, `CPU mean ${fixed(p.cpuMean, 1)}%, high ${fixed(p.cpuMax, 1)}%; RSS high ${fixed(p.rssMaxKb / 1024, 1)} MiB (${mon.source})`,
      ]);
    }
  }
  rows.push(['verdict', result.verdict.pass ? 'PASS' : `FAIL: ${result.verdict.reasons.join('; ')}`]);
  const w = Math.max(...rows.map((r) => r[0].length));
  return `${[result.title, ...rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`)].join('\n')}\n`;
}

function consoleReport(results) {
  return results.map(block).join('\n');
}

module.exports = { consoleReport };
