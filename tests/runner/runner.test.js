'use strict';

/* global document, window, getComputedStyle -- page.evaluate callbacks run in the browser */

// The suites end to end against a real gateway and REST simulator (child processes), the
// process monitor with both sources, and the reports.

const { tmpDir } = require('../helpers/tmp');
const { launchChromium } = require('../helpers/chromium');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { runSuites, writeHtml, writeJson } = require('../../runner');
const { ProcessMonitor, hasPidstat, slope } = require('../../runner/monitor');
const { consoleReport } = require('../../runner/report/console');
const { runCli } = require('../helpers/spawn');
const { assertAnsweredOnce } = require('../helpers/answered');

const REPORTS = tmpDir(); // the report and its screenshot, removed after the run

describe('test runner', function () {
  this.timeout(120_000);
  let run;
  // The suites start their own gateways, with the warm-up as `ged145 run` does (about 2 s each):
  // a cold gateway and REST simulator failed a few of the first queries when the host was busy.
  // Set for this block only: every test file shares this process's environment.
  const warmup = process.env.GED145_WARMUP;
  before(() => {
    process.env.GED145_WARMUP = '1';
  });
  after(() => {
    if (warmup === undefined) delete process.env.GED145_WARMUP;
    else process.env.GED145_WARMUP = warmup;
  });

  before(async () => {
    // The load suite at 200 queries/s, not its default 500: this checks that the suites run and
    // report, not what the machine sustains (bench/ does that). At 500/s a CI run on a host that
    // was briefly starved of CPU failed here (790 of 1,500, the rest-sim and gateway sharing two
    // cores with other load). Beside four busy loops, 500/s failed 2 runs of 2 (over 1,000 errors
    // each) and 200/s passed 6 of 7.
    run = await runSuites('all', { suite: { durationS: 3, count: 10, rate: 200 }, seed: 1 });
  });

  it('all: speed, error and load run against child processes, every query answered', () => {
    assert.deepEqual(run.results.map((r) => r.suite), ['speed', 'error', 'load']);
    const [speed, error, load] = run.results;
    for (const r of [speed, error]) assert.ok(r.verdict.pass, `${r.suite}: ${r.verdict.reasons}`);
    assert.equal(speed.figures.heartbeats.transactions, 10);
    assert.equal(speed.figures.queries.transactions, 10);
    assert.ok(error.figures.induced.reject > 0);
    assert.deepEqual(error.figures.caught, error.figures.induced);
    // The load suite's verdict is "every query answered ok in time": on a busy machine a scheduler's
    // pause makes late answers and the gateway's own deadline answers, which the suite reports (and
    // fails on, as it should), and nothing else. That it passes on a quiet machine is bench/'s to show.
    assertAnsweredOnce(load.summary, 600);
    assert.deepEqual(Object.keys(load.figures.errorsByKind).filter((k) => !['E_AG_HOST_ERROR1', 'late'].includes(k)), [],
      JSON.stringify(load.figures.errorsByKind));
    assert.equal(load.verdict.pass, load.figures.errors === 0);
  });

  it('samples the gateway and the REST simulator every second', () => {
    const mon = run.results[2].monitor;
    assert.equal(mon.source, hasPidstat() ? 'pidstat' : '/proc');
    for (const name of ['gateway', 'rest-sim']) {
      const p = mon.processes[name];
      assert.ok(p.samples.length >= 2, `${name}: ${p.samples.length} samples`);
      assert.ok(p.rssMaxKb > 10_000, `${name} RSS ${p.rssMaxKb} KiB`);
      assert.ok(p.samples.every((s) => s.cpu >= 0));
    }
  });

  it('prints a compact console block per suite', () => {
    const text = consoleReport(run.results);
    const lines = [
      'speed: 10 sequential heartbeats', 'induced errors', 'expected: rejects caught', 'expected: fatal caught', 'unexpected: queries lost',
      'latency', 'verdict',
    ];
    for (const line of lines) {
      assert.ok(text.includes(line), line);
    }
    assert.ok(!text.includes('undefined') && !text.includes('NaN'), text);
  });

  it('writes every figure as JSON', () => {
    const file = path.join(tmpDir(), 'run.json');
    writeJson(file, run);
    const back = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.equal(back.results.length, 3);
    assert.ok(back.results[2].summary.latencyMs.p99 > 0);
    assert.ok(back.meta.machine.includes('cores'));
  });

  it('the HTML report renders every chart in headless Chromium with no page errors', async () => {
    fs.mkdirSync(REPORTS, { recursive: true });
    const file = path.join(REPORTS, 'test-report.html');
    writeHtml(file, run, 'ged145 test-suite report');
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      const problems = [];
      page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
      await page.goto(`file://${file}`);
      await page.waitForFunction(() => document.body.dataset.chartsRendered !== undefined, null, { timeout: 10_000 });
      const check = await page.evaluate(() => {
        const canvases = [...document.querySelectorAll('canvas[data-chart]')];
        return {
          canvases: canvases.length,
          rendered: Number(document.body.dataset.chartsRendered),
          withChart: canvases.filter((c) => window.Chart.getChart(c) !== undefined).length,
          painted: canvases.filter((c) => {
            const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
            for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) return true;
            return false;
          }).length,
          kinds: [...new Set(canvases.map((c) => c.dataset.chart))].sort(),
          figures: document.querySelectorAll('section figure').length,
          empty: [...document.querySelectorAll('p.empty')].map((p) => p.dataset.empty),
          speedCharts: [...document.querySelectorAll('section')][0].querySelectorAll('canvas[data-chart="transactions"]').length,
          summaryRows: document.querySelectorAll('table.summary tr').length - 1,
          height: document.documentElement.scrollHeight,
          expectedRows: document.querySelectorAll('tr.expected').length,
          unexpectedRows: document.querySelectorAll('tr.unexpected').length,
          calmRows: document.querySelectorAll('tr.unexpected-none').length,
          expectedColour: getComputedStyle(document.querySelector('tr.expected th')).color,
          throughputSets: window.Chart.getChart(document.querySelector('canvas[data-chart="throughput"]')).data.datasets.map((d) => d.label),
          speedTimeline: [...document.querySelectorAll('section')][0].querySelectorAll('canvas[data-chart="latency"]').length,
          speedNotes: [...[...document.querySelectorAll('section')][0].querySelectorAll('p.empty')].map((p) => [p.dataset.empty, p.textContent]),
          // A chart over time is a line: two points at least, never a single dot.
          timePoints: canvases.filter((c) => ['throughput', 'latency', 'cpu', 'rss'].includes(c.dataset.chart))
            .map((c) => Math.min(...window.Chart.getChart(c).data.datasets.map((d) => d.data.length))),
          // No axis label is wider than its axis (the error chart's long category names were clipped).
          clipped: canvases.flatMap((c) => {
            const ch = window.Chart.getChart(c);
            return Object.values(ch.scales).filter((sc) => sc.axis === 'y' && sc.type === 'category').flatMap((sc) => {
              const ctx = c.getContext('2d');
              ctx.font = sc._resolveTickFontOptions(0).string;
              const lines = sc.ticks.flatMap((t) => [].concat(t.label));
              const dropped = sc.ticks.length < sc.getLabels().length ? [`${c.dataset.chart}: ${sc.getLabels().length - sc.ticks.length} labels skipped`] : [];
              return [...dropped, ...lines.filter((l) => ctx.measureText(l).width > sc.width).map((l) => `${c.dataset.chart}: ${l}`)];
            });
          }),
          // One number format: no figure of four digits or more without grouping.
          ungrouped: [...document.querySelectorAll('table.figures td, h2')].map((e) => e.textContent).filter((t) => /(?<![\d,.])\d{4,}/.test(t)),
          // The error suite: what its chart draws red, and what its table says was unexpected.
          errorChart: (() => {
            const section = [...document.querySelectorAll('section')][1];
            const canvas = section.querySelector('canvas[data-chart="errors"]');
            const ch = canvas && window.Chart.getChart(canvas);
            const red = ch ? ch.data.labels.map((l, i) => [l, ch.data.datasets[0].data[i]]).filter(([l]) => !l.startsWith('expected')) : [];
            const table = [...section.querySelectorAll('tr.unexpected, tr.unexpected-none')]
              .map((tr) => Number.parseInt(tr.querySelector('td').textContent, 10));
            return { red: red.reduce((a, [, v]) => a + v, 0), table: table.reduce((a, b) => a + b, 0), labels: ch ? ch.data.labels : [] };
          })(),
        };
      });
      assert.deepEqual(problems, []);
      // Every figure is a painted chart or says why it has none; the speed suite charts its transactions.
      assert.equal(check.figures, 3 * 6 + 1);
      assert.equal(check.canvases + check.empty.length, check.figures);
      assert.equal(check.rendered, check.canvases);
      assert.equal(check.withChart, check.canvases);
      assert.equal(check.painted, check.canvases);
      assert.equal(check.speedCharts, 1);
      assert.ok(check.kinds.includes('transactions') && check.kinds.includes('throughput'), check.kinds.join());
      // Only a chart with no line to show says so: no errors, or a run too short for two points (the speed suite's 20 transactions).
      assert.ok(check.empty.every((k) => ['errors', 'cpu', 'rss', 'throughput', 'latency'].includes(k)), check.empty.join());
      assert.ok(check.timePoints.every((n) => n >= 2), `every chart over time has two points at least: ${check.timePoints}`);
      assert.ok(check.speedTimeline === 1 || check.speedNotes.some(([k, text]) => k === 'latency' && /the run lasted [\d.]+ s, one point/.test(text)),
        JSON.stringify(check.speedNotes));
      assert.deepEqual(check.clipped, []);
      assert.deepEqual(check.ungrouped, []);
      assert.deepEqual(check.throughputSets, ['ok answers/s', 'app error answers/s (the backend\'s "no")', 'failed answers/s']);
      assert.equal(check.errorChart.red, check.errorChart.table, `the error chart and its table agree: ${check.errorChart.labels}`);
      assert.equal(check.summaryRows, 3);
      // The error suite passed: its expected outcomes in blue, its unexpected ones all zero (green).
      assert.deepEqual([check.expectedRows, check.unexpectedRows, check.calmRows], [4, 0, 3]);
      assert.equal(check.expectedColour, 'rgb(37, 99, 235)');
      await page.waitForTimeout(1500);
      assert.equal(await page.evaluate(() => document.documentElement.scrollHeight), check.height, 'the page does not grow while open');
      await page.screenshot({ path: path.join(REPORTS, 'test-report.png'), fullPage: true });
      assert.ok(fs.statSync(path.join(REPORTS, 'test-report.png')).size > 10_000);
    } finally {
      await browser.close();
    }
  });

  it('soak reports CPU and RSS high-water marks and the RSS trend', async () => {
    const soak = await runSuites('soak', { suite: { rate: 100, durationS: 4 }, monitorWith: '/proc' });
    const r = soak.results[0];
    // Every query answered; whether in time is the load suite's verdict and the clock's business
    // (a busy machine makes late answers), not what this test is about.
    assert.equal(r.figures.transactions, r.summary.sent, r.rows.map((row) => row.join(': ')).join('; '));
    assert.ok(r.verdict.reasons.every((why) => !/RSS/.test(why)), r.verdict.reasons.join());
    assert.equal(r.monitor.source, '/proc');
    assert.ok(r.figures.gateway.rssMaxKb > 0);
    // Four seconds support no trend: the report says so instead of extrapolating to an hour.
    const trend = r.rows.find(([k]) => k === 'RSS trend')[1];
    assert.match(trend, /^not reported: \d+ s of samples after warm-up, a trend needs 10 minutes \(RSS changed [+-]\d+\.\d MiB meanwhile\)$/);
    assert.equal(r.figures.gateway.rssGrowthKbPerHour, null);
  });

  it('--target runs against a gateway that is already running', async () => {
    const { startStack } = require('../helpers/stack');
    const stack = await startStack();
    try {
      const r = await runSuites('speed', { target: { host: '127.0.0.1', port: stack.port }, pid: process.pid });
      assert.ok(r.results[0].verdict.pass);
      assert.match(r.meta.target, new RegExp(`127.0.0.1:${stack.port}`));
    } finally {
      await stack.stop();
    }
  });

  it('ged145 run prints the report, writes JSON and HTML, exits 0; bad usage exits 2', async () => {
    const dir = tmpDir();
    const r = await runCli(['run', 'load', '--rate', '100', '--duration', '2', '--json', path.join(dir, 'r.json'), '--html', path.join(dir, 'r.html')]);
    // 0 when the suite passed, 1 when it did not (late answers on a busy machine), as its report says.
    const report = JSON.parse(fs.readFileSync(path.join(dir, 'r.json'), 'utf8'));
    assert.equal(r.code, report.results.every((x) => x.verdict.pass) ? 0 : 1, r.err);
    assertAnsweredOnce(report.results[0].summary, 200);
    assert.match(r.out, /load: 100 queries\/s for 2 s/);
    assert.match(r.out, /HTML report: /);
    assert.ok(fs.existsSync(path.join(dir, 'r.json')) && fs.existsSync(path.join(dir, 'r.html')));
    assert.equal((await runCli(['run', 'nope'])).code, 2);
    assert.equal((await runCli(['run', 'load', '--rate', '-1'])).code, 2);
  });
});

describe('process monitor', () => {
  for (const prefer of ['/proc', 'pidstat']) {
    it(`reads CPU and RSS of a busy process (${prefer})`, async () => {
      if (prefer === 'pidstat') assert.ok(hasPidstat(), 'pidstat is needed (apt-get install sysstat; .ci/run does it)');
      const { spawn } = require('node:child_process');
      const busy = spawn(process.execPath, ['-e', 'const b = Buffer.alloc(64 * 1024 * 1024, 1); while (true) b[0]++;']);
      try {
        await new Promise((r) => setTimeout(r, 300));
        const mon = new ProcessMonitor([{ name: 'busy', pid: busy.pid }], { intervalMs: prefer === 'pidstat' ? 1000 : 200, prefer }).start();
        await new Promise((r) => setTimeout(r, prefer === 'pidstat' ? 2600 : 1100));
        const s = mon.stop();
        assert.equal(s.source, prefer);
        const p = s.processes.busy;
        assert.ok(p.samples.length >= 2, `${p.samples.length} samples`);
        // One busy thread: near 100 % of a core, less when the host is busy (44 % beside four other
        // busy loops on two cores), never 0 and never more than the one core it can use.
        assert.ok(p.cpuMax > 20 && p.cpuMax <= 110, `cpu ${p.cpuMax}`);
        assert.ok(p.rssMaxKb > 60 * 1024, `rss ${p.rssMaxKb} KiB`);
      } finally {
        busy.kill('SIGKILL');
      }
    });
  }

  it('fits the RSS trend with least squares', () => {
    assert.equal(slope([[0, 1], [1, 3], [2, 5]]), 2);
  });
});
