'use strict';

// The router simulator's half-hour figures and the gateway's /report/half-hour.csv reconcile
// (docs/reports.md, "Checking it against a router"): three real processes, rest-sim failing and
// hanging some requests, a gateway, and `ged145 router --sides A,B --json`, with the wall clock of
// the gateway and the router set so that a half hour turns during the run. Per side, the counts
// are equal, whatever half hour each copy fell in; the router's delays are at least the
// gateway's (it measures from before the gateway reads to after it writes).
//
// Chosen so that a busy machine cannot move a reply across a line: replies take about 50 ms, the
// hung ones 500 ms (the gateway's deadline); LateTimeout is 250 ms, RequestTimeout 1000 ms on
// both sides, so a scheduler's pause of 200 ms changes no count.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnCli } = require('../helpers/spawn');
const { offsetClock } = require('../helpers/faketime');
const { tmpDir } = require('../helpers/tmp');
const { halfHourStart, nextHalfHour } = require('../../gateway/ops/half-hour');

const LATE_MS = 250;
const REQUEST_TIMEOUT_MS = 1000;
const DEADLINE_MS = 500;
const RUN_S = 10;
const TURN_AFTER_MS = 8000; // from the gateway's start: it and the router are up by then

/** CSV text (no quoted fields in these rows) -> objects by column name. */
function parseCsv(text) {
  const [head, ...lines] = text.trim().split('\r\n');
  const names = head.split(',');
  return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [names[i], v])));
}

/** Per side: counts summed over half hours (and the gateway's subtypes), delays as sums over replies. */
function bySide(rows) {
  const out = {};
  for (const r of rows) {
    const s = out[r.Side] || (out[r.Side] = {
      RequestsToHalf: 0, AnsweredToHalf: 0, ErrorsToHalf: 0, LatesToHalf: 0, delaySumMs: 0, maxDelayMs: 0, halfHours: new Set(),
    });
    for (const k of ['RequestsToHalf', 'AnsweredToHalf', 'ErrorsToHalf', 'LatesToHalf']) s[k] += Number(r[k]);
    const replies = Number(r.AnsweredToHalf) + Number(r.ErrorsToHalf);
    if (replies > 0) {
      // The router's rows have the sum; the CSV, an average in whole ms.
      s.delaySumMs += r.delaySumMs === undefined ? Number(r.AvgDelayToHalf) * replies : r.delaySumMs;
      s.maxDelayMs = Math.max(s.maxDelayMs, Number(r.MaxDelayToHalf));
    }
    s.halfHours.add(r.DateTimeUTC);
  }
  return out;
}

describe('router simulator and gateway: the half-hour figures reconcile per side', function () {
  this.timeout(90_000);
  const children = [];
  after(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  });

  it('the same requests, answers, errors and lates per side, across a half hour that turns during the run', async () => {
    const sim = spawnCli(['rest-sim', '--port', '0', '--error-rate', '0.05', '--hang-rate', '0.02', '--latency', '50', '--latency-spread', '60',
      '--ready-json']);
    children.push(sim);
    const { url } = await sim.ready();

    // One wall clock for the gateway and the router, a half hour turning TURN_AFTER_MS from now.
    const now = Date.now();
    const turn = nextHalfHour(halfHourStart(now));
    const shiftS = Math.round((turn - (now + TURN_AFTER_MS)) / 1000);
    const clock = offsetClock(`${shiftS >= 0 ? '+' : ''}${shiftS}s`);

    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({
      backend: { url }, deadlineMs: DEADLINE_MS, routerRequestTimeoutMs: REQUEST_TIMEOUT_MS, routerLateTimeoutMs: LATE_MS,
    }));
    const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json'], { env: clock });
    children.push(gw);
    const ready = await gw.ready();

    const router = spawnCli(['router', '--port', String(ready.port), '--sides', 'A,B', '--rate', '100', '--duration', String(RUN_S),
      '--late-timeout', String(LATE_MS), '--request-timeout', String(REQUEST_TIMEOUT_MS), '--connect-info', 'A=lab-A,B=lab-B', '--json'], { env: clock });
    children.push(router);
    const { code } = await router.exited;
    assert.equal(code, 0, router.err);
    const summary = JSON.parse(router.out);
    const res = await fetch(`http://127.0.0.1:${ready.adminPort}/report/half-hour.csv`);
    const csv = await res.text();

    assert.equal(summary.halfHours.lateTimeoutMs, LATE_MS);
    assert.ok(summary.halfHours.rows.every((r) => r.TimeoutsToHalf === 0), JSON.stringify(summary.halfHours));
    const atRouter = bySide(summary.halfHours.rows);
    const atGateway = bySide(parseCsv(csv));
    assert.deepEqual(Object.keys(atRouter).sort(), ['lab-A', 'lab-B']);
    assert.deepEqual(Object.keys(atGateway).sort(), ['lab-A', 'lab-B'], csv);
    const detail = `router: ${JSON.stringify(summary.halfHours.rows)}\ngateway:\n${csv}`;
    for (const side of ['lab-A', 'lab-B']) {
      const r = atRouter[side];
      const g = atGateway[side];
      const counts = (x) => [x.RequestsToHalf, x.AnsweredToHalf, x.ErrorsToHalf, x.LatesToHalf];
      assert.deepEqual(counts(r), counts(g), `${side}: [requests, answered, errors, lates]\n${detail}`);
      assert.ok(r.RequestsToHalf >= 0.9 * 100 * RUN_S, `${side}: ${r.RequestsToHalf} requests`);
      assert.ok(r.ErrorsToHalf > 0 && r.LatesToHalf > 0, `${side}: errors and lates both occur\n${detail}`);
      // Each reply's delay at the router holds the gateway's; the CSV's averages and maxima are in whole ms.
      const replies = r.AnsweredToHalf + r.ErrorsToHalf;
      assert.ok(r.delaySumMs / replies >= g.delaySumMs / replies - 0.5, `${side}: average delay at the router is at least the gateway's\n${detail}`);
      assert.ok(r.maxDelayMs >= g.maxDelayMs - 1, `${side}: longest delay\n${detail}`);
      assert.equal(r.halfHours.size, 2, `${side}: the half hour turned during the run at the router\n${detail}`);
      assert.equal(g.halfHours.size, 2, `${side}: ... and at the gateway\n${detail}`);
    }
    gw.kill('SIGTERM');
    sim.kill('SIGTERM');
    await Promise.all([gw.exited, sim.exited]);
  });
});
