'use strict';

/* global document, window -- page.evaluate callbacks run in the browser */

// The longer runner suites end to end (outage: 10 s; capacity: several steps), against a real
// gateway and REST simulator. Part of \`npm run test:stress\` (which .ci/run runs), not of
// \`npm test\`, to keep that under three minutes.

const assert = require('node:assert/strict');
const path = require('node:path');
const { tmpDir } = require('../helpers/tmp');
const { launchChromium } = require('../helpers/chromium');
const { runSuites, writeHtml } = require('../../runner');

// The suites start their own gateways: without the warm-up (2.3 s each), as spawnCli's do.
process.env.GED145_WARMUP = '0';

const REPORTS = tmpDir();

describe('test runner: the longer suites', function () {
  this.timeout(180_000);

  it('outage: answers by outcome per second through slow, down and back; charted with the fault windows, at a stable size', async () => {
    const out = await runSuites('outage', { suite: { rate: 100, durationS: 10 }, seed: 2 });
    const [r] = out.results;
    assert.equal(r.verdict.pass, true, r.verdict.reasons.join('; '));
    const f = r.figures;
    assert.equal(f.errors, 0);
    assert.ok(f.byPhase.normal.ok > 0 && f.byPhase.back.ok > 0, JSON.stringify(f.byPhase));
    assert.ok(f.byPhase.down.stale + f.byPhase.down.fallback > 0, 'while down, answers came from the cache or the fallback');
    assert.equal(f.byPhase.down['host error'], 0, 'no query failed while the backend was down');
    assert.deepEqual(f.windows.map((w) => w.name), ['slow', 'down']);
    const file = path.join(REPORTS, 'outage.html');
    writeHtml(file, out, 'outage');
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`file://${file}`);
      await page.waitForFunction(() => document.body.dataset.chartsRendered !== undefined, null, { timeout: 10_000 });
      const height = () => page.evaluate(() => document.documentElement.scrollHeight);
      const before = await height();
      const chart = await page.evaluate(() => {
        const c = document.querySelector('canvas[data-chart="outcomes"]');
        const ch = window.Chart.getChart(c);
        return { datasets: ch.data.datasets.map((d) => d.label), height: c.getBoundingClientRect().height };
      });
      assert.deepEqual(chart.datasets, ['ok', 'stale', 'fallback', 'app error', 'host error']);
      assert.ok(chart.height > 100 && chart.height <= 320, `outcomes chart ${chart.height} px tall`);
      await page.waitForTimeout(1500);
      assert.equal(await height(), before, 'the page does not grow while it stays open');
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });

  it('capacity raises the rate until the budget breaks and names the highest rate that held', async () => {
    const cap = await runSuites('capacity', { suite: { start: 50, step: 100, max: 250, stepS: 1, budgetMs: 1000, warmupS: 1 } });
    const r = cap.results[0];
    assert.deepEqual(r.figures.steps.map((s) => s.rate), [50, 150, 250]);
    assert.equal(r.figures.sustainableRate, 250);
    assert.ok(r.figures.steps.every((x) => x.successPct === 100 && x.achieved > 0), JSON.stringify(r.figures.steps));
    assert.deepEqual(r.rows.at(-1), ['limited by', 'nothing: every step held']);
    const file = path.join(REPORTS, 'capacity.html');
    writeHtml(file, cap, 'capacity');
    const html = require('node:fs').readFileSync(file, 'utf8');
    assert.match(html, /<canvas data-chart="capacity"/, 'the rate -> p99 and success curve');
    assert.match(html, /Latency percentiles over time \(ms\) \(last step only: 250\/s\)/, 'time charts say which step they show');
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`file://${file}`);
      await page.waitForFunction(() => document.body.dataset.chartsRendered !== undefined, null, { timeout: 10_000 });
      const sets = await page.evaluate(() => window.Chart.getChart(document.querySelector('canvas[data-chart="capacity"]')).data.datasets
        .map((d) => [d.label, d.data.length]));
      assert.deepEqual(sets, [['p99 ms', 3], ['answered ok %', 3]]);
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
    const tight = await runSuites('capacity', { suite: { start: 200, step: 200, max: 600, stepS: 1, budgetMs: 0.001, warmupS: 0 } });
    assert.equal(tight.results[0].figures.sustainableRate, 0);
    assert.equal(tight.results[0].figures.steps.length, 1, 'it stops at the first step that fails');
    assert.match(tight.results[0].figures.limitedBy, /^latency alone: p99 \d+\.\d ms over the 0\.001 ms budget, no errors, gateway CPU/);
  });
});
