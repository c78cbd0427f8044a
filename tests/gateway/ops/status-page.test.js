'use strict';

/* global document, getComputedStyle -- page.evaluate callbacks run in the browser */

// The admin port's live status page, in real Chromium (playwright-core) against a real stack:
// `ged145 gateway` and `ged145 rest-sim` as child processes, two router sessions (sides A and
// B). The page loads with no script error, shows the sessions and the backend's state, updates
// by itself, keeps its height, and asks nothing of any other host. With --workers 2 the primary
// adds its workers' status up. A backend state whose evidence is old is shown idle, with its age.

const assert = require('node:assert/strict');
const http = require('node:http');
const { spawnCli } = require('../../helpers/spawn');
const { WireClient } = require('../../helpers/wire');

const { launchChromium } = require('../../helpers/chromium');
const { steppableClock } = require('../../helpers/faketime');

const getJson = (port, path) => new Promise((resolve, reject) => {
  http.get({ host: '127.0.0.1', port, path }, (res) => {
    let body = '';
    res.on('data', (d) => { body += d; });
    res.on('end', () => resolve({
      status: res.statusCode, headers: res.headers, json: res.headers['content-type'].includes('json') ? JSON.parse(body) : body,
    }));
  }).on('error', reject);
});

async function stack(extra = []) {
  const sim = spawnCli(['rest-sim', '--port', '0', '--ready-json']);
  const { url } = await sim.ready();
  const gw = spawnCli(['gateway', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', url, '--ready-json', ...extra]);
  const ready = await gw.ready();
  const routers = [];
  for (const side of ['A', 'B']) {
    const c = await WireClient.connect(ready.port);
    await c.open({ config: `side-${side} lab` });
    routers.push(c);
  }
  return {
    ...ready,
    routers,
    async queries(n, from) {
      for (const [i, c] of routers.entries()) {
        for (let k = 0; k < n; k++) c.query(from + k, { subtype: 'customer.lookup', clid: `555${1000000 + (k % 10)}` });
        await c.waitFor((m) => m.invokeId === from + n - 1, 5000).catch(() => assert.fail(`router ${i} got no answer`));
      }
    },
    async stop() {
      for (const c of routers) c.close();
      gw.kill('SIGTERM');
      sim.kill('SIGTERM');
      await Promise.all([gw.exited, sim.exited]);
    },
  };
}

describe('the status page on the admin port', function () {
  this.timeout(60_000);
  let browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => { if (browser) await browser.close(); });

  it('shows both router sessions and the backend, updates by itself at a stable height, and asks no other host', async () => {
    const s = await stack();
    try {
      await s.queries(20, 100);
      const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
      const problems = [];
      const requests = [];
      let navigations = 0;
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
      page.on('request', (r) => requests.push(r.url()));
      page.on('framenavigated', () => { navigations++; });
      const origin = `http://127.0.0.1:${s.adminPort}`;
      await page.goto(`${origin}/`);
      await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 1, null, { timeout: 10_000 });
      const sessions = await page.$$eval('#sessions tr', (rows) => rows.slice(1).map((r) => [...r.children].map((td) => td.textContent)));
      assert.deepEqual(sessions.map((r) => r[1]).sort(), ['side-A lab', 'side-B lab']);
      assert.ok(sessions.every((r) => r[2] === 'open' && r[4] === '20' && r[5] === '20' && r[6] === '0'), JSON.stringify(sessions));
      const backend = await page.textContent('#backend');
      assert.match(backend, /^reachable since/);
      const circuits = await page.$$eval('#circuits tr', (rows) => rows.slice(1).map((r) => r.textContent));
      assert.equal(circuits.length, 1);
      assert.match(circuits[0], /^http:\/\/127\.0\.0\.1:\d+closed/);
      assert.match(circuits[0], /400-$/, 'the origin\'s requests (40) and failures (0), no last error');
      assert.match(await page.textContent('#outcomes'), /^outcome or subtypequeriessharep50 \/ p99 msok40100 %\d+ \/ \d+subtype customer\.lookup40100 %\d+ \/ \d+$/);
      // Each section's height too, so that a change says where it was.
      const heights = () => page.evaluate(() => ({
        page: document.documentElement.scrollHeight,
        sections: [...document.querySelectorAll('section')].map((el) => `${(el.querySelector('h2') || el).textContent.slice(0, 24)}: ${el.offsetHeight}`),
      }));
      const first = await heights();
      const height = first.page;

      // More traffic: the page shows it without being reloaded.
      await s.queries(15, 200);
      await page.waitForFunction(() => [...document.querySelectorAll('#sessions tr')].slice(1)
        .every((r) => r.children[4].textContent === '35'), null, { timeout: 5000 });
      await page.waitForTimeout(2500);
      const second = await heights();
      assert.equal(second.page, height, `the page keeps its height as it updates: ${JSON.stringify(first.sections)} then ${JSON.stringify(second.sections)}`);
      assert.equal(navigations, 1, 'no reload');
      assert.ok(Number(await page.evaluate(() => document.body.dataset.updates)) >= 3);
      assert.deepEqual(problems, []);
      assert.deepEqual(requests.filter((u) => !u.startsWith(`${origin}/`)), [], 'every request goes to the admin port');
      assert.ok(requests.some((u) => u === `${origin}/status`));
      await page.close();
    } finally {
      await s.stop();
    }
  });

  it('the backend\'s "no" (app_error) has its own colour and column and is never counted as failed', async () => {
    const s = await stack();
    try {
      const [a] = s.routers;
      // 6 known callers, 4 the REST simulator does not know (HTTP 404: app_error, E_AG_HOST_ERROR2).
      for (let k = 0; k < 10; k++) a.query(300 + k, { subtype: 'customer.lookup', clid: k < 6 ? `555${1000000 + k}` : `999${1000000 + k}` });
      await a.waitFor((m) => m.invokeId === 309, 5000);
      const { json } = await getJson(s.adminPort, '/status');
      const side = json.sessions.find((x) => x.connectInfo === 'side-A lab');
      assert.deepEqual([side.counters.queries, side.counters.ok, side.counters.appError, side.counters.failed], [10, 6, 4, 0]);
      const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
      await page.goto(`http://127.0.0.1:${s.adminPort}/`);
      await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 1, null, { timeout: 10_000 });
      const view = await page.evaluate(() => {
        const head = [...document.querySelectorAll('#sessions th')].map((th) => th.textContent);
        const rowA = [...document.querySelectorAll('#sessions tr')].find((tr) => tr.textContent.includes('side-A'));
        const cell = (name) => rowA.children[head.indexOf(name)];
        const tile = (label) => [...document.querySelectorAll('.tile')].find((t) => t.firstChild.textContent === label);
        const outcome = [...document.querySelectorAll('#outcomes td')].find((td) => td.textContent === 'app_error');
        const legend = [...document.querySelectorAll('#rate-legend span')].find((x) => x.textContent.includes('app_error'));
        return {
          appError: cell('app error').textContent,
          appErrorColour: getComputedStyle(cell('app error')).color,
          failed: cell('failed').textContent,
          failedTile: tile('failed (60 s)').querySelector('b').textContent,
          failedTileClass: tile('failed (60 s)').querySelector('b').className,
          appTile: tile('app error (60 s)').querySelector('b').textContent,
          outcomeColour: outcome && getComputedStyle(outcome).color,
          legendColour: legend && getComputedStyle(legend.querySelector('i')).backgroundColor,
        };
      });
      assert.deepEqual(view, {
        appError: '4',
        appErrorColour: 'rgb(79, 70, 229)',
        failed: '0',
        failedTile: '0 %',
        failedTileClass: 'ok',
        appTile: '40 %',
        outcomeColour: 'rgb(79, 70, 229)',
        legendColour: 'rgb(79, 70, 229)',
      });
      await page.close();
    } finally {
      await s.stop();
    }
  });

  it('subtypes that are names of Object\'s own (constructor, __proto__, toString) never break the page', async () => {
    const s = await stack();
    try {
      const [c] = s.routers;
      // A second of ordinary queries first: the seconds without these subtypes are what broke the page.
      await s.queries(5, 800);
      await new Promise((r) => setTimeout(r, 1100));
      const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
      names.forEach((subtype, i) => c.query(900 + i, { subtype, clid: '5551000001' }));
      await c.waitFor((m) => m.invokeId === 900 + names.length - 1, 5000);
      const page = await browser.newPage();
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
      await page.goto(`http://127.0.0.1:${s.adminPort}/`);
      await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 2, null, { timeout: 10_000 });
      const outcomes = await page.textContent('#outcomes');
      for (const n of names) assert.ok(outcomes.includes(`subtype ${n}`), `${n} has its row: ${outcomes}`);
      assert.deepEqual(problems, []);
      await page.close();
    } finally {
      await s.stop();
    }
  });

  it('a subtype that timed out and was not asked again is shown idle after a minute, with its last state and how old it is', async () => {
    // A real backend too slow for the deadline (250 ms): every query to it times out.
    const slow = http.createServer((req, res) => { setTimeout(() => res.end('{}'), 2000).unref(); });
    await new Promise((r) => slow.listen(0, '127.0.0.1', r));
    const clock = steppableClock(); // the gateway's wall clock, moved on below as a quiet spell would
    const gw = spawnCli(['gateway', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', `http://127.0.0.1:${slow.address().port}`,
      '--ready-json'], { env: clock.env });
    let c = null;
    try {
      const ready = await gw.ready();
      c = await WireClient.connect(ready.port);
      await c.open({ config: 'quiet lab' });
      for (let id = 1; id <= 5; id++) c.query(id, { subtype: 'slow.lookup', clid: '5551000001' });
      await c.waitForCount(5, 10_000);
      const failing = (await getJson(ready.adminPort, '/status')).json.backend;
      assert.deepEqual([failing.state, failing.lastState, failing.failing.length], ['failing', 'failing', 1], JSON.stringify(failing));
      assert.ok(failing.evidenceAgeS < 60);
      const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`http://127.0.0.1:${ready.adminPort}/`);
      await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 1, null, { timeout: 10_000 });
      assert.match(await page.textContent('#backend'), /^failing since [\d:]+( [AP]M)? · last query \d+ s ago · last error: deadline/);

      clock.step('+150s'); // two and a half minutes without a query
      let idle = null;
      for (let i = 0; i < 50 && (idle === null || idle.state !== 'idle'); i++) {
        await new Promise((r) => setTimeout(r, 100));
        idle = (await getJson(ready.adminPort, '/status')).json.backend;
      }
      assert.deepEqual([idle.state, idle.lastState, idle.lastQueryAt, idle.failing], ['idle', 'failing', failing.lastQueryAt, []], JSON.stringify(idle));
      assert.ok(idle.evidenceAgeS >= 150, `evidence ${idle.evidenceAgeS} s old`);
      const lane = Object.values(idle.origins)[0].routes.find((r) => r.route === 'slow.lookup');
      assert.deepEqual([lane.state, lane.lastState], ['idle', 'failing']);
      const shown = await page.waitForFunction(() => {
        const text = document.getElementById('backend').textContent;
        return text.startsWith('idle') ? text : null;
      }, null, { timeout: 10_000 });
      const at = await page.evaluate((iso) => new Date(iso).toLocaleTimeString(), failing.lastQueryAt);
      assert.match(await shown.jsonValue(), new RegExp(`^idle: no queries since ${at} \\([23] min ago\\) · last seen failing`));
      const tile = await page.evaluate(() => [...document.querySelectorAll('.tile')].find((t) => t.firstChild.textContent === 'backend').textContent);
      assert.match(tile, /^backendidleno queries since /);
      assert.deepEqual(problems, []);
      await page.close();
    } finally {
      if (c !== null) c.close();
      gw.kill('SIGTERM');
      await gw.exited;
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    }
  });

  it('--workers 2: the primary adds its workers up; the page shows every process', async () => {
    const s = await stack(['--workers', '2']);
    try {
      await s.queries(10, 100);
      const { status, headers, json } = await getJson(s.adminPort, '/status');
      assert.equal(status, 200);
      assert.match(headers['cache-control'], /no-store/);
      assert.deepEqual(json.processes.map((p) => p.role), ['primary', 'gateway', 'gateway']);
      assert.deepEqual(json.sessions.map((x) => x.connectInfo).sort(), ['side-A lab', 'side-B lab']);
      const answered = json.history.seconds.reduce((n, sec) => n + (sec.outcomes.ok || 0), 0);
      assert.equal(answered, 20, 'the seconds of both workers, added up');
      const okLatencies = json.history.seconds.reduce((n, sec) => n + (sec.byOutcome.ok || []).reduce((a, c) => a + c, 0), 0);
      assert.equal(okLatencies, 20, 'and their latency buckets by outcome');
      assert.equal(json.backend.length, 2);
      const page = await browser.newPage();
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`http://127.0.0.1:${s.adminPort}/`);
      await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 1, null, { timeout: 10_000 });
      assert.equal(await page.$$eval('#processes tr', (rows) => rows.length - 1), 3);
      // A worker that stops answering keeps its row, named, and the page goes on redrawing.
      const stopped = json.processes[1].pid;
      process.kill(stopped, 'SIGSTOP');
      try {
        await page.waitForFunction((pid) => [...document.querySelectorAll('#processes tr')]
          .some((tr) => tr.textContent.includes(String(pid)) && tr.textContent.includes('no answer within 2 s')), stopped, { timeout: 15_000 });
      } finally {
        process.kill(stopped, 'SIGCONT');
      }
      assert.deepEqual(problems, []);
      await page.close();
    } finally {
      await s.stop();
    }
  });
});
