'use strict';

/* global document -- page.evaluate callbacks run in the browser */

// The half-hour view and the objectives of a running gateway (docs/reports.md), over real sockets
// against the real REST simulator: what /status, /report/half-hour.csv and /metrics say after
// known traffic from two router sides, that a reload keeps the figures, and, with --workers 2 as a
// real child process, that the primary adds its workers' figures (and keeps those of workers a
// rolling restart replaced) and the status page shows both tables in real Chromium.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { startStack } = require('../../helpers/stack');
const { spawnCli } = require('../../helpers/spawn');
const { WireClient } = require('../../helpers/wire');
const { tmpDir } = require('../../helpers/tmp');
const { loadConfig } = require('../../../gateway/config');
const { startRestSim } = require('../../../rest-sim/server');

const { launchChromium } = require('../../helpers/chromium');
// echo's latency and the deadline are far above what a loaded machine takes (a cold burst took 200 ms
// here), slow's far below the 80 ms the REST simulator waits: each event is good or bad for certain.
const SLO = { echo: { objective: 99, latencyMs: 10_000 }, slow: { objective: 99.9, latencyMs: 50 } };
const ROOMY = { deadlineMs: 5000, routerRequestTimeoutMs: 600_000 };

const get = async (port, p) => {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, type: res.headers.get('content-type'), body: p.endsWith('.csv') ? await res.text() : await res.json() };
};

/** Sends queries [from, from + n) of fields on c and waits for their replies. */
async function send(c, from, n, fields) {
  for (let i = from; i < from + n; i++) c.query(i, fields);
  await c.waitFor((m) => m.invokeId === from + n - 1, 5000);
}

/** The rows of the current half hour, by "side/subtype". */
function current(halfHours) {
  const p = halfHours.periods.at(-1);
  return Object.fromEntries(p.rows.map((r) => [`${r.side}/${r.subtype}`, r]));
}

describe('reports: the half-hour view and the objectives of a running gateway', function () {
  this.timeout(60_000);

  it('counts two sides by subtype, refusals, lates and objectives; serves the CSV; a reload keeps the figures', async () => {
    const stack = await startStack({ gateway: { ...ROOMY, slo: SLO, routerLateTimeoutMs: 30, 'limits.maxSessions': 2 } });
    const a = await WireClient.connect(stack.port);
    const b = await WireClient.connect(stack.port);
    const third = await WireClient.connect(stack.port);
    try {
      await a.open({ config: 'side-A' });
      await b.open({ config: 'side-B' });
      await third.open({ config: 'side-C', invokeId: 7 }); // over limits.maxSessions: refused
      await send(a, 100, 10, { subtype: 'echo' });
      await send(a, 200, 2, { subtype: 'fail' }); // the REST simulator's 500: FAILURE_CONF
      await send(a, 300, 2, { subtype: 'slow', vars: { 1: '80' } }); // answered after 80 ms: late, and too slow for its objective
      await send(b, 400, 5, { subtype: 'echo' });

      const st = (await get(stack.adminPort, '/status')).body;
      const rows = current(st.halfHours);
      assert.equal(st.halfHours.lateTimeoutMs, 30);
      assert.deepEqual([rows['side-A/echo'].requests, rows['side-A/echo'].answered, rows['side-A/echo'].errors], [10, 10, 0]);
      assert.deepEqual([rows['side-A/fail'].requests, rows['side-A/fail'].errors], [2, 2]);
      assert.equal(rows['side-A/slow'].lates, 2);
      assert.ok(rows['side-A/slow'].maxDelayMs >= 80, `${rows['side-A/slow'].maxDelayMs}`);
      assert.equal(rows['side-B/echo'].requests, 5);
      assert.equal(rows['/'].refusals, 1, 'the third session, refused at OPEN_REQ');
      const byName = Object.fromEntries(st.objectives.map((o) => [o.name, o]));
      assert.deepEqual([byName.echo.events, byName.echo.good], [15, 15]);
      assert.deepEqual([byName.slow.events, byName.slow.bad, byName.slow.burnRates['5m']], [2, 2, 1000]);
      // Seconds of traffic are not the 5 minutes the first alert's short window holds: every event
      // bad is still no budget spent a thousand times over and no page, and /status says so.
      for (const o of [byName.echo, byName.slow]) {
        assert.equal(o.budgetLeftPercent, null, o.name);
        assert.deepEqual(o.alerts, { page: null, ticket: null }, o.name);
        assert.ok(o.judgedInS > 0 && o.judgedInS <= 300 && o.judgedInS === 300 - o.coveredS, JSON.stringify(o));
      }

      const csv = await get(stack.adminPort, '/report/half-hour.csv');
      assert.equal(csv.status, 200);
      assert.match(csv.type, /^text\/csv/);
      const lines = csv.body.trim().split('\r\n');
      assert.match(lines[0], /^DateTime,Side,Subtype,RequestsToHalf,AnsweredToHalf,ErrorsToHalf,AvgDelayToHalf,MaxDelayToHalf,LatesToHalf,RefusalsToHalf/);
      assert.ok(lines.some((l) => /,side-B,echo,5,5,0,\d+,\d+,\d+,0,/.test(l)), csv.body);

      const metrics = await (await fetch(`http://127.0.0.1:${stack.adminPort}/metrics`)).text();
      assert.match(metrics, /^ged145_objective_events_total\{objective="echo",result="good"\} 15$/m);
      assert.match(metrics, /^ged145_objective_events_total\{objective="slow",result="bad"\} 2$/m);
      const promtool = spawnSync('promtool', ['check', 'metrics'], { input: metrics, encoding: 'utf8' });
      assert.equal(promtool.status, 0, `${promtool.stdout}${promtool.stderr}`);

      // A reload: new settings, the same figures.
      const next = loadConfig({
        overrides: {
          host: '127.0.0.1', port: 0, 'admin.port': 0, 'backend.url': stack.sim.url, warmup: false, ...ROOMY, slo: SLO, routerLateTimeoutMs: 1000,
        },
      });
      stack.gw.reload(next);
      await send(a, 500, 1, { subtype: 'echo' });
      const after = (await get(stack.adminPort, '/status')).body;
      assert.equal(after.halfHours.lateTimeoutMs, 1000);
      assert.equal(current(after.halfHours)['side-A/echo'].requests, 11);
      assert.equal(after.objectives.find((o) => o.name === 'echo').events, 16);
    } finally {
      for (const c of [a, b, third]) c.close();
      await stack.stop();
    }
  });

  describe('with --workers 2', () => {
    let browser;
    before(async () => {
      browser = await launchChromium();
    });
    after(async () => { if (browser) await browser.close(); });

    it('the primary adds its workers up (sums, never means), and the status page shows both tables', async () => {
      const sim = await startRestSim({ port: 0 });
      const dir = tmpDir();
      const file = path.join(dir, 'gateway.json');
      fs.writeFileSync(file, JSON.stringify({ ...ROOMY, backend: { url: sim.url }, slo: SLO }));
      const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--workers', '2', '--ready-json']);
      const routers = [];
      try {
        const ready = await gw.ready();
        // Four connections: node:cluster hands them out in turn, so both workers serve some.
        for (let i = 0; i < 4; i++) {
          const c = await WireClient.connect(ready.port);
          await c.open({ config: i % 2 === 0 ? 'side-A' : 'side-B' });
          routers.push(c);
        }
        for (const [i, c] of routers.entries()) await send(c, 1000 * (i + 1), 25, { subtype: 'echo' });
        const sessions = (await get(ready.adminPort, '/sessions')).body;
        assert.equal(new Set(sessions.map((s) => s.pid)).size, 2, 'both workers hold sessions');
        const st = (await get(ready.adminPort, '/status')).body;
        const rows = current(st.halfHours);
        assert.deepEqual([rows['side-A/echo'].requests, rows['side-B/echo'].requests], [50, 50]);
        const echo = st.objectives.find((o) => o.name === 'echo');
        assert.deepEqual([echo.events, echo.good], [100, 100]);
        const csv = (await get(ready.adminPort, '/report/half-hour.csv')).body;
        assert.ok(csv.split('\r\n').some((l) => l.includes(',side-A,echo,50,50,0,')), csv);

        const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
        const problems = [];
        page.on('pageerror', (e) => problems.push(e.message));
        page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
        await page.goto(`http://127.0.0.1:${ready.adminPort}/`);
        await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 1, null, { timeout: 10_000 });
        const tables = await page.evaluate(() => ({
          halfHours: [...document.querySelectorAll('#half-hours tr')].map((tr) => [...tr.children].map((td) => td.textContent)),
          objectives: [...document.querySelectorAll('#objectives tr')].map((tr) => [...tr.children].map((td) => td.textContent)),
        }));
        assert.deepEqual(problems, []);
        assert.equal(tables.halfHours[0][2], 'requests');
        assert.deepEqual(tables.halfHours.slice(1).map((r) => [r[1], r[2], r[3]]).sort(), [['side-A', '50', '50'], ['side-B', '50', '50']]);
        const row = tables.objectives.find((r) => r[0] === 'echo');
        assert.ok(row, JSON.stringify(tables.objectives));
        assert.deepEqual([row[2], row[3], row[8]], ['100', '100 %', 'not judged yet']);
        assert.match(row[4], /^judged in \d+ s$/);
        assert.ok(tables.objectives.some((r) => r[0] === 'slow' && r[2] === '0'));
        await page.close();

        // A rolling restart replaces both workers: the half hours they counted stay in the sum.
        for (const c of routers.splice(0)) c.close();
        gw.kill('SIGUSR2');
        await gw.waitFor(/rolling restart done: 2 workers replaced/, 30_000);
        const later = current((await get(ready.adminPort, '/status')).body.halfHours);
        assert.deepEqual([later['side-A/echo'].requests, later['side-B/echo'].requests], [50, 50]);
      } finally {
        for (const c of routers) c.close();
        gw.kill('SIGTERM');
        await gw.exited;
        await sim.close();
      }
    });
  });
});
