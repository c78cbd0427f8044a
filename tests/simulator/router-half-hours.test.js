'use strict';

// The router simulator's half-hour figures (simulator/router-half-hours.js): each query copy booked once
// per side, on a clock the test moves, and through a Router against a scripted host that answers,
// fails, answers late, answers after RequestTimeout and drops the connection.

const assert = require('node:assert/strict');
const { serialize, STATUS } = require('../../lib/protocol');
const { RouterHalfHours } = require('../../simulator/router-half-hours');
const { Router } = require('../../simulator/router');
const { ROUTER_DEFAULTS, routerSettings } = require('../../simulator/settings');
const { CSV_COLUMNS, HALF_HOUR_MS, halfHourStart } = require('../../gateway/ops/half-hour');
const { DEFAULTS } = require('../../gateway/config');
const { formatSummary } = require('../../simulator/format');
const { startFakeHost } = require('../helpers/fake-host');

const wait = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(cond, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await wait(5);
  }
}

/** The rows of a view added up per side (a half hour may turn during a test). */
function bySide(rows) {
  const out = {};
  for (const r of rows) {
    const s = out[r.Side] || (out[r.Side] = {
      RequestsToHalf: 0, AnsweredToHalf: 0, ErrorsToHalf: 0, TimeoutsToHalf: 0, LatesToHalf: 0, MaxDelayToHalf: 0,
    });
    for (const k of ['RequestsToHalf', 'AnsweredToHalf', 'ErrorsToHalf', 'TimeoutsToHalf', 'LatesToHalf']) s[k] += r[k];
    s.MaxDelayToHalf = Math.max(s.MaxDelayToHalf, r.MaxDelayToHalf || 0);
  }
  return out;
}

describe('router simulator: the router\'s half-hour figures', () => {
  it('books replies, timeouts and lost copies per side and half hour, under the CSV\'s column names', () => {
    let now = halfHourStart(Date.UTC(2026, 2, 2, 10, 0)) + HALF_HOUR_MS - 2000; // two seconds before a half hour turns
    const h = new RouterHalfHours({ lateTimeoutMs: 100, now: () => now });
    h.replied('side-A', false, 40);
    h.replied('side-A', false, 100); // exactly LateTimeout: not late
    h.replied('side-A', true, 100.4);
    h.replied('side-B', false, 12);
    now += 2000; // the next half hour
    h.timedOut('side-A');
    h.lost('side-A', 2);
    h.lost('side-B', 0);
    h.replied('side-A', false, 300);
    const { lateTimeoutMs, rows } = h.toJSON();
    assert.equal(lateTimeoutMs, 100);
    const cells = (r) => [r.Side, r.RequestsToHalf, r.AnsweredToHalf, r.ErrorsToHalf, r.TimeoutsToHalf, r.LatesToHalf, r.AvgDelayToHalf, r.MaxDelayToHalf];
    assert.deepEqual(rows.map(cells), [
      ['side-A', 3, 2, 1, 0, 1, 80, 100],
      ['side-B', 1, 1, 0, 0, 0, 12, 12],
      ['side-A', 4, 1, 0, 1, 1, 300, 300],
    ]);
    assert.equal(Date.parse(rows[2].DateTimeUTC) - Date.parse(rows[0].DateTimeUTC), HALF_HOUR_MS);
    assert.equal(Date.parse(rows[2].DateTimeUTC), halfHourStart(now));
    assert.match(rows[0].DateTime, /^\d{4}-\d\d-\d\d \d\d:[03]0$/);
    assert.equal(rows[0].delaySumMs, 240.4);
    for (const key of Object.keys(rows[0])) {
      assert.ok(CSV_COLUMNS.includes(key) || ['TimeoutsToHalf', 'delaySumMs'].includes(key), `${key} is one of the gateway's CSV columns`);
    }
  });

  it('a side with only timeouts has no delay (null, as the CSV leaves it empty)', () => {
    const h = new RouterHalfHours({ lateTimeoutMs: 100 });
    h.timedOut('side-A');
    const [row] = h.toJSON().rows;
    assert.deepEqual([row.RequestsToHalf, row.TimeoutsToHalf, row.AvgDelayToHalf, row.MaxDelayToHalf], [1, 1, null, null]);
  });

  it('LateTimeout defaults to the gateway\'s routerLateTimeoutMs, and each side has a ConnectInfo of its own', () => {
    assert.equal(ROUTER_DEFAULTS.lateTimeoutMs, DEFAULTS.routerLateTimeoutMs);
    const { connectInfo } = routerSettings();
    assert.notEqual(connectInfo.A, connectInfo.B);
    assert.deepEqual(routerSettings({ connectInfo: 'lab' }).connectInfo, { A: 'lab', B: 'lab' });
    assert.deepEqual(routerSettings({ connectInfo: { B: 'lab-B' } }).connectInfo, { A: connectInfo.A, B: 'lab-B' });
    assert.throws(() => routerSettings({ connectInfo: { C: 'x' } }), /unknown side 'C'/);
    assert.throws(() => routerSettings({ connectInfo: 'x'.repeat(255) }), /at most 254 characters/);
  });

  it('through a Router, per side: a reply in time counts once, a reply after RequestTimeout is a timeout only, a drop loses a request', async function () {
    this.timeout(20_000);
    const SLOW_MS = 250; // late (LateTimeout 100) and well within RequestTimeout (1000)
    const OVERDUE_MS = 1500;
    let overdueSent = 0;
    const host = await startFakeHost((m, conn) => {
      const reply = (buf, ms = 0) => setTimeout(() => conn.send(buf), ms);
      switch (m.type) {
        case 'OPEN_REQ': conn.send(serialize.openConf(m.invokeId)); break;
        case 'CLOSE_REQ': conn.send(serialize.closeConf(m.invokeId)); break;
        case 'QUERY_REQ':
          if (m.subtype === 'ok') reply(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
          else if (m.subtype === 'fail') reply(serialize.failureConf(m.invokeId, STATUS.E_AG_HOST_ERROR1));
          else if (m.subtype === 'slow') reply(serialize.queryResp({ invokeId: m.invokeId, status: 0 }), SLOW_MS);
          else if (m.subtype === 'overdue') {
            setTimeout(() => {
              conn.send(serialize.queryResp({ invokeId: m.invokeId, status: 0 }));
              overdueSent++;
            }, OVERDUE_MS);
          } else if (m.subtype === 'drop') conn.socket.destroy();
          break;
        default: break;
      }
    });
    const router = new Router({
      targets: [{ host: '127.0.0.1', port: host.port }],
      sides: ['A', 'B'],
      mode: 'duplicate',
      settings: {
        requestTimeoutMs: 1000, lateTimeoutMs: 100, sessionRetryMs: 60_000, connectInfo: { A: 'lab-A', B: 'lab-B' },
      },
    });
    try {
      await router.start();
      assert.deepEqual(host.connections.map((c) => c.received[0].config).sort(), ['lab-A', 'lab-B']);
      for (const subtype of ['ok', 'fail', 'slow', 'overdue']) router.query({ subtype, routerCallDay: 1, routerCallKey: 1 });
      await until(() => overdueSent === 2, 10_000);
      await wait(100); // the overdue replies are read: they change nothing
      router.query({ subtype: 'drop', routerCallDay: 1, routerCallKey: 2 });
      await until(() => router.stats.lost === 1);
      const s = await router.stop({ drainMs: 0 });
      assert.deepEqual(s.violations, {});
      const sides = bySide(s.halfHours.rows);
      assert.deepEqual(Object.keys(sides).sort(), ['lab-A', 'lab-B']);
      for (const side of ['lab-A', 'lab-B']) {
        const { MaxDelayToHalf, ...counts } = sides[side];
        assert.deepEqual(counts, {
          RequestsToHalf: 5, AnsweredToHalf: 2, ErrorsToHalf: 1, TimeoutsToHalf: 1, LatesToHalf: 1,
        }, side);
        // The slow reply's delay, not the overdue one's. Node starts a timer from the event loop's
        // cached clock, which a busy loop has let fall behind, so the host's 250 ms can end a few ms
        // early by the router's clock (a CI run measured 249).
        assert.ok(MaxDelayToHalf >= SLOW_MS - 20 && MaxDelayToHalf < 1000, `${side}: ${MaxDelayToHalf}`);
      }
      const text = formatSummary('run', s);
      assert.match(text, /\n {2}half hours as the router counts them \(late: over LateTimeout, 100 ms\)\n {4}\d\d:[03]0 lab-A {2}requests \d/, text);
      assert.match(text, /\n {4}\d\d:[03]0 lab-B {2}requests \d.*timeouts \d; late \d; delay avg \d+ ms, max \d+ ms\n$/, text);
    } finally {
      await router.stop({ drainMs: 0 });
      await host.close();
    }
  });
});
