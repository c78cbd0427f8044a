'use strict';

// The router's half-hour view alone (gateway/ops/half-hour.js), on a clock the test moves: local
// half-hour boundaries in zones with :00, :30 and :45 offsets and across daylight-saving changes,
// the figures of a cell, the 48 half hours kept, a cluster's sum of its workers, and the CSV.

const assert = require('node:assert/strict');
const {
  HalfHours, mergeHalfHours, halfHourCsv, halfHourStart, nextHalfHour, CSV_COLUMNS,
} = require('../../../gateway/ops/half-hour');

/** Runs f with the process's time zone set to tz (Node reads TZ afresh when it is set). */
function inZone(tz, f) {
  const before = process.env.TZ;
  process.env.TZ = tz;
  try {
    return f();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

const utc = (s) => Date.parse(s);
const iso = (t) => new Date(t).toISOString();

describe('half-hour view (unit)', () => {
  describe('boundaries: half hours of the local clock', () => {
    it('UTC and a :30 zone: :00 and :30 local time', () => {
      inZone('UTC', () => {
        assert.equal(iso(halfHourStart(utc('2026-03-10T10:44:59.999Z'))), '2026-03-10T10:30:00.000Z');
        assert.equal(iso(halfHourStart(utc('2026-03-10T10:30:00.000Z'))), '2026-03-10T10:30:00.000Z');
      });
      inZone('Asia/Kolkata', () => { // UTC+5:30: local :00 and :30 are :30 and :00 UTC too
        assert.equal(iso(halfHourStart(utc('2026-03-10T10:44:00Z'))), '2026-03-10T10:30:00.000Z');
      });
    });

    it('a :45 zone (Asia/Kathmandu, UTC+5:45): the half hours start at :15 and :45 UTC', () => {
      inZone('Asia/Kathmandu', () => {
        const t = utc('2026-03-10T10:44:00Z'); // 16:29 local
        assert.equal(iso(halfHourStart(t)), '2026-03-10T10:15:00.000Z');
        assert.equal(iso(nextHalfHour(halfHourStart(t))), '2026-03-10T10:45:00.000Z');
        const h = new HalfHours({ now: () => t });
        assert.equal(h.toJSON().periods[0].local, '2026-03-10 16:00');
      });
      inZone('Pacific/Chatham', () => { // UTC+12:45 (+13:45 in summer)
        assert.equal(new Date(halfHourStart(utc('2026-07-10T10:50:00Z'))).getUTCMinutes(), 45);
      });
    });

    it('daylight saving: the repeated hour is two half hours twice; a 30-minute change still moves on', () => {
      inZone('Europe/Berlin', () => {
        // 2026-10-25 03:00 CEST -> 02:00 CET: local 02:00-03:00 is lived twice.
        let start = halfHourStart(utc('2026-10-25T00:00:00Z')); // 02:00 CEST
        const seen = [];
        for (let i = 0; i < 5; i++) {
          const next = nextHalfHour(start);
          seen.push((next - start) / 60_000);
          start = next;
        }
        assert.deepEqual(seen, [30, 30, 30, 30, 30]);
      });
      inZone('Australia/Lord_Howe', () => {
        // 2026-04-05 02:00 local (+11) goes back to 01:30 (+10:30): the half hour 01:30 repeats.
        let start = halfHourStart(utc('2026-04-04T14:00:00Z')); // 01:00 local
        for (let i = 0; i < 6; i++) {
          const next = nextHalfHour(start);
          assert.ok(next > start, 'always forward');
          assert.ok(next - start <= 60 * 60_000);
          start = next;
        }
      });
    });
  });

  describe('figures', () => {
    it('requests, answered, errors, delays, lates and refusals per side and subtype', () => {
      inZone('UTC', () => {
        const now = utc('2026-03-10T10:00:05Z');
        const h = new HalfHours({ lateTimeoutMs: 100, now: () => now });
        h.query('A', 'cust', 'ok', false, 20);
        h.query('A', 'cust', 'cached', false, 0.4);
        h.query('A', 'cust', 'host_error', true, 250);
        h.query('A', 'cust', 'deadline', true, 250.6);
        h.query('A', 'cust', 'lost_router_gone', false, 900); // no reply: a request, nothing else
        h.query('side-A lab', 'cust', 'ok', false, 3); // a side is the session's ConnectInfo, any text
        h.query('B', 'cust', 'app_error', true, 101);
        h.query(null, 'bal', 'ok', false, 100); // exactly lateTimeoutMs: not late
        h.query('B', 'cust', 'ok', false, 5, undefined, true); // a canary's candidate answered it
        h.query('B', 'cust', 'host_error', true, 7, undefined, true); // and failed
        h.refused(null);
        h.refused('A');
        const [p] = h.toJSON().periods;
        assert.equal(p.start, '2026-03-10T10:00:00.000Z');
        assert.equal(p.local, '2026-03-10 10:00');
        const row = (side, subtype) => p.rows.find((r) => r.side === side && r.subtype === subtype);
        assert.deepEqual(row('A', 'cust'), {
          side: 'A', subtype: 'cust', requests: 5, answered: 2, errors: 2, lates: 2, delaySumMs: 521, maxDelayMs: 250.6, refusals: 0,
          canary: 0, canaryErrors: 0,
        });
        // The canary's queries are in the router's counts too: the router cannot tell them apart.
        assert.deepEqual(row('B', 'cust'), {
          side: 'B', subtype: 'cust', requests: 3, answered: 1, errors: 2, lates: 1, delaySumMs: 113, maxDelayMs: 101, refusals: 0,
          canary: 2, canaryErrors: 1,
        });
        assert.equal(row('', 'bal').lates, 0);
        assert.equal(row('', '').refusals, 1);
        assert.equal(row('A', '').refusals, 1);
        assert.equal(row('side-A lab', 'cust').answered, 1);
        assert.equal(p.rows.length, 6);
      });
    });

    it('a query costs no new cell: the same record is counted on all half hour', () => {
      const now = 1_800_000 * 1000;
      const h = new HalfHours({ now: () => now });
      const c = h.cell('cust', 'A');
      for (let i = 0; i < 1000; i++) h.query('A', 'cust', 'ok', false, 3);
      assert.equal(h.cell('cust', 'A'), c);
      assert.equal(c.requests, 1000);
    });

    it('sides and subtypes are router text: at most maxSides and maxSubtypes a half hour, the rest "(other)"; labels printable', () => {
      const h = new HalfHours({ maxSubtypes: 3, now: () => 0 });
      for (const s of ['a', 'b', 'c', 'd', 'e', 'c', '__proto__']) h.query('A', s, 'ok', false, 1);
      h.query('A', 'x\u0001\u00e9', 'ok', false, 1);
      const rows = new HalfHours({ maxSubtypes: 3, maxSides: 2, now: () => 0 });
      rows.query('A', 'x\u0001\u00e9', 'ok', false, 1);
      for (const side of ['B', 'C', 'D\n']) rows.query(side, 'y', 'ok', false, 1);
      assert.deepEqual(h.toJSON().periods[0].rows.map((r) => [r.subtype, r.requests]), [['(other)', 4], ['a', 1], ['b', 1], ['c', 2]]);
      const view = rows.toJSON().periods[0].rows;
      assert.deepEqual(view.map((r) => [r.side, r.subtype, r.requests]), [['(other)', 'y', 2], ['A', 'x??', 1], ['B', 'y', 1]]);
      assert.equal(Object.prototype.requests, undefined);
    });
  });

  describe('keeping and summing', () => {
    it('the last 48 half hours, the current one included; a quiet half hour has no rows', () => {
      inZone('UTC', () => {
        let now = utc('2026-03-10T00:00:00Z');
        const h = new HalfHours({ now: () => now });
        for (let i = 0; i < 60; i++) {
          h.query('A', 'cust', 'ok', false, i);
          now += 30 * 60_000;
        }
        const { periods } = h.toJSON(); // now is the start of half hour 60, with nothing in it
        assert.equal(periods.length, 48);
        assert.equal(periods.at(-1).rows.length, 0);
        assert.equal(periods[0].start, '2026-03-10T06:30:00.000Z'); // half hour 13
        assert.equal(periods[0].rows[0].maxDelayMs, 13);
        now += 10 * 3_600_000; // ten hours of nothing
        assert.equal(h.toJSON().periods.length, 28 + 1, 'half hours older than 24 hours are dropped as time passes');
      });
    });

    it("a cluster's workers: counts and delay sums added, the longest delay kept, never averages of averages", () => {
      const now = 3_600_000 * 1000;
      const w1 = new HalfHours({ now: () => now });
      const w2 = new HalfHours({ now: () => now });
      w1.query('A', 'cust', 'ok', false, 10);
      for (let i = 0; i < 3; i++) w2.query('A', 'cust', 'ok', false, 30);
      w2.query('B', 'cust', 'host_error', true, 260);
      w1.query('A', 'cust', 'ok', false, 10, undefined, true);
      w2.query('A', 'cust', 'host_error', true, 10, undefined, true);
      w2.refused(null);
      const merged = mergeHalfHours([w1.toJSON(), JSON.parse(JSON.stringify(w2.toJSON()))]);
      assert.equal(merged.periods.length, 1);
      const a = merged.periods[0].rows.find((r) => r.side === 'A');
      assert.deepEqual([a.requests, a.answered, a.delaySumMs, a.maxDelayMs, a.canary, a.canaryErrors], [6, 5, 120, 30, 2, 1]);
      const csv = halfHourCsv(merged).split('\r\n');
      assert.equal(csv[0], CSV_COLUMNS.join(','));
      // The router's columns keep their places; what marks a canary's queries comes after them.
      assert.deepEqual(CSV_COLUMNS.slice(0, 11), ['DateTime', 'Side', 'Subtype', 'RequestsToHalf', 'AnsweredToHalf', 'ErrorsToHalf', 'AvgDelayToHalf',
        'MaxDelayToHalf', 'LatesToHalf', 'RefusalsToHalf', 'DateTimeUTC']);
      const cells = csv.find((l) => l.includes(',A,cust,')).split(',');
      assert.equal(cells[CSV_COLUMNS.indexOf('AvgDelayToHalf')], '20', '120 ms over 6 replies, not (10 + 30) / 2');
      assert.deepEqual([cells[CSV_COLUMNS.indexOf('CanaryToHalf')], cells[CSV_COLUMNS.indexOf('CanaryErrorsToHalf')]], ['2', '1']);
      assert.equal(cells[CSV_COLUMNS.indexOf('MaxDelayToHalf')], '30');
      const refusals = csv.find((l) => l.includes(',,,')).split(',');
      assert.equal(refusals[CSV_COLUMNS.indexOf('RefusalsToHalf')], '1');
      assert.equal(refusals[CSV_COLUMNS.indexOf('AvgDelayToHalf')], '', 'no reply, no delay');
    });

    it('CSV fields a spreadsheet would read as a formula, or that hold commas and quotes, are quoted', () => {
      const h = new HalfHours({ now: () => 0 });
      h.query('A', '=HYPERLINK("x")', 'ok', false, 1);
      h.query('A', 'a,b', 'ok', false, 1);
      const text = halfHourCsv(h.toJSON());
      assert.ok(text.includes(',"\'=HYPERLINK(""x"")",'), text);
      assert.ok(text.includes(',"a,b",'), text);
      assert.ok(text.endsWith('\r\n'));
    });
  });
});
