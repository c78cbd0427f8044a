'use strict';

// A worker that leaves hands its figures to the primary: with --workers 2, queries answered and
// nobody looking at /metrics, /status or the CSV, then a rolling restart (SIGUSR2) or a SIGTERM
// to one worker; afterwards the counters, the half-hour rows and the objectives still count every
// query. Real processes: rest-sim, the gateway's primary and workers, a router session.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Router } = require('../../../simulator/router');
const { spawnCli } = require('../../helpers/spawn');
const { tmpDir } = require('../../helpers/tmp');

const get = async (adminPort, what) => fetch(`http://127.0.0.1:${adminPort}/${what}`, { signal: AbortSignal.timeout(10_000) });
const json = async (adminPort, what) => (await get(adminPort, what)).json();
const text = async (adminPort, what) => (await get(adminPort, what)).text();

/** ged145_queries_total summed over its labels. */
const queriesTotal = (metrics) => [...metrics.matchAll(/^ged145_queries_total(?:\{[^}]*\})? (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
/** ged145_objective_events_total summed over its labels. */
const objectiveEvents = (metrics) => [...metrics.matchAll(/^ged145_objective_events_total(?:\{[^}]*\})? (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
/** RequestsToHalf summed over the CSV's rows. */
function csvRequests(csv) {
  const [head, ...rows] = csv.trim().split('\n');
  const col = head.split(',').indexOf('RequestsToHalf');
  return rows.reduce((n, r) => n + Number(r.split(',')[col]), 0);
}

/** Sends n queries on one router session, each answered; resolves with the pid of the worker that served them (from /sessions, which reads no figures). */
async function routerQueries(port, adminPort, n) {
  const router = new Router({ targets: [{ host: '127.0.0.1', port }], seed: 11 });
  await router.start();
  await router.runClosedLoop({ window: 4, count: n });
  const sessions = await json(adminPort, 'sessions');
  const s = await router.stop();
  assert.equal(s.answered, n, JSON.stringify(s));
  assert.equal(sessions.length, 1, JSON.stringify(sessions));
  return sessions[0].pid;
}

describe('cluster: figures that survive a worker leaving', function () {
  this.timeout(120_000);
  let sim;
  let gw;

  async function start() {
    sim = spawnCli(['rest-sim', '--port', '0', '--ready-json']);
    const { url } = await sim.ready();
    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({
      backend: { url },
      slo: { 'customer.lookup': { objective: 99, latencyMs: 5000 }, echo: { objective: 99, latencyMs: 5000 } },
    }));
    gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--workers', '2', '--ready-json']);
    const ready = await gw.ready();
    await gw.waitFor(/2 workers listening for ICM routers/);
    return { port: Number(ready.port), adminPort: Number(ready.adminPort) };
  }

  afterEach(async () => {
    for (const p of [gw, sim]) if (p && p.exitCode === null) p.kill('SIGTERM');
    await Promise.all([gw, sim].filter(Boolean).map((p) => p.exited));
  });

  async function assertAllCounted(adminPort, n) {
    const metrics = await text(adminPort, 'metrics');
    assert.ok(queriesTotal(metrics) >= n, `ged145_queries_total ${queriesTotal(metrics)} of ${n}`);
    assert.ok(objectiveEvents(metrics) >= n, `ged145_objective_events_total ${objectiveEvents(metrics)} of ${n}`);
    const csv = await text(adminPort, 'report/half-hour.csv');
    assert.ok(csvRequests(csv) >= n, `RequestsToHalf ${csvRequests(csv)} of ${n}:\n${csv}`);
    const { objectives } = await json(adminPort, 'status');
    const good = objectives.reduce((k, o) => k + o.good, 0);
    assert.ok(good >= n, `objectives good ${good} of ${n}: ${JSON.stringify(objectives)}`);
    return { metrics, csv, objectives };
  }

  it('300 queries, then SIGUSR2 with nobody reading /metrics or /status: every figure still counts them', async () => {
    const { port, adminPort } = await start();
    await routerQueries(port, adminPort, 300);
    gw.kill('SIGUSR2');
    await gw.waitFor(/rolling restart done/, 60_000);
    await assertAllCounted(adminPort, 300);
    // Counters never go down: a second rolling restart, again without a look between.
    const before = queriesTotal(await text(adminPort, 'metrics'));
    gw.kill('SIGUSR2');
    await gw.waitFor(/rolling restart done[\s\S]*rolling restart done/, 60_000);
    assert.ok(queriesTotal(await text(adminPort, 'metrics')) >= before);
    await assertAllCounted(adminPort, 300);
  });

  it('a worker sent SIGTERM hands its figures over before it exits; one killed keeps what was pulled last (every 5 s), counted as lost', async () => {
    const { port, adminPort } = await start();
    const first = await routerQueries(port, adminPort, 300);
    process.kill(first, 'SIGTERM');
    await gw.waitFor(new RegExp(`worker ${first} exited`), 30_000);
    await assertAllCounted(adminPort, 300);
    assert.match(await text(adminPort, 'metrics'), /^ged145_worker_figures_lost_total 0$/m);
    // A worker killed: what the primary pulled from it (every 5 s) stays; its exit is counted as a loss.
    const served = await routerQueries(port, adminPort, 100);
    await new Promise((r) => { setTimeout(r, 12_000); }); // two pulls' worth, nobody scraping
    process.kill(served, 'SIGKILL');
    await gw.waitFor(new RegExp(`worker ${served} exited without handing over its figures`), 30_000);
    const metrics = await text(adminPort, 'metrics');
    assert.match(metrics, /^ged145_worker_figures_lost_total 1$/m);
    assert.ok(queriesTotal(metrics) >= 400, `ged145_queries_total ${queriesTotal(metrics)} of 400: the last pull kept the killed worker's`);
  });
});
