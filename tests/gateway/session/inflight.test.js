'use strict';

// InFlight alone (gateway/session/inflight.js) on a clock the test moves: one timer per session
// whatever the number of queries, deadlines in arrival order, exactly once whichever comes first
// of the answer, the deadline and the end of the connection.

const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const sinon = require('sinon');
const { InFlight } = require('../../../gateway/session/inflight');

function setup() {
  const clock = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  const expired = [];
  const counted = [];
  const busy = { ms: 0 }; // how far the real clock runs ahead of the timers (a blocked event loop)
  const inflight = new InFlight({
    now: () => clock.now + busy.ms,
    onDeadline: (p, lateMs) => {
      expired.push([p.query.invokeId, lateMs]);
      inflight.settle(p);
    },
    onLost: (p, outcome) => counted.push(outcome),
  });
  return {
    clock, inflight, expired, counted, busy,
  };
}
const q = (invokeId) => ({ invokeId, subtype: 's' });

describe('InFlight (unit, fake clock)', () => {
  let t;
  afterEach(() => t.clock.restore());

  it('a thousand queries cost one timer; answered in time, none expires', () => {
    t = setup();
    const ps = [];
    for (let i = 0; i < 1000; i++) ps.push(t.inflight.add(q(i), 250));
    assert.equal(t.clock.countTimers(), 1);
    for (const p of ps) assert.equal(t.inflight.settle(p), true);
    t.clock.tick(300);
    assert.deepEqual(t.expired, []);
    assert.equal(t.inflight.size, 0);
  });

  it('expireIfDue: a busy loop answers what is due without waiting for the timer, and leaves one timer for the rest', () => {
    t = setup();
    t.inflight.add(q(1), 100);
    t.inflight.add(q(2), 150);
    t.inflight.expireIfDue(50); // nothing due: nothing happens
    assert.deepEqual(t.expired, []);
    t.busy.ms = 110; // the loop is busy: the real clock is at 110, the timer has not fired
    t.inflight.expireIfDue();
    assert.deepEqual(t.expired, [[1, 10]]);
    assert.equal(t.clock.countTimers(), 1, 'the old timer cleared, one armed for query 2');
    t.busy.ms = 0;
    t.clock.tick(149);
    assert.deepEqual(t.expired.map(([id]) => id), [1], 'query 2 is not expired early');
    t.clock.tick(1);
    assert.deepEqual(t.expired.map(([id]) => id), [1, 2]);
    assert.equal(t.clock.countTimers(), 0);
  });

  it('deadlines fire in arrival order, each at its own time, and the timer waits for the next', () => {
    t = setup();
    t.inflight.add(q(1), 100);
    t.clock.tick(10);
    t.inflight.add(q(2), 100);
    t.clock.tick(10);
    t.inflight.add(q(3), 100);
    t.clock.tick(79);
    assert.deepEqual(t.expired, []);
    t.clock.tick(1); // t = 100
    assert.deepEqual(t.expired.map(([id]) => id), [1]);
    t.clock.tick(10);
    assert.deepEqual(t.expired.map(([id]) => id), [1, 2]);
    t.clock.tick(10);
    assert.deepEqual(t.expired.map(([id]) => id), [1, 2, 3]);
    assert.equal(t.clock.countTimers(), 0, 'nothing left to wait for');
  });

  it('a deadline runs from when the bytes arrived, not from when the query was handled', () => {
    t = setup();
    t.clock.tick(1000);
    const p = t.inflight.add(q(1), 100, 950); // arrived 50 ms ago, waited behind others
    assert.equal(p.deadlineAt, 1050);
    t.clock.tick(50);
    assert.deepEqual(t.expired.map(([id]) => id), [1]);
  });

  it('exactly once: an answer after the deadline, or a deadline after the answer, does nothing', () => {
    t = setup();
    const late = t.inflight.add(q(1), 50);
    const early = t.inflight.add(q(2), 50);
    assert.equal(t.inflight.settle(early), true);
    t.clock.tick(50);
    assert.deepEqual(t.expired.map(([id]) => id), [1], 'the answered one does not expire');
    assert.equal(t.inflight.settle(late), false, 'the late answer finds it settled');
    assert.equal(t.inflight.settle(early), false);
  });

  it('after a reload shortens deadlineMs, a newer query due first expires first', () => {
    t = setup();
    t.inflight.add(q(1), 200);
    t.clock.tick(10);
    t.inflight.add(q(2), 50); // due at 60, before q1 at 200
    t.clock.tick(50);
    assert.deepEqual(t.expired.map(([id]) => id), [2]);
    t.clock.tick(140);
    assert.deepEqual(t.expired.map(([id]) => id), [2, 1]);
  });

  it('reports how late a deadline fired when the event loop was busy', () => {
    t = setup();
    t.inflight.add(q(1), 100);
    t.inflight.add(q(2), 100);
    t.clock.tick(99);
    t.busy.ms = 30; // the timer due at 100 runs when the clock says 130
    t.clock.tick(1);
    assert.deepEqual(t.expired, [[1, 30], [2, 30]]);
  });

  it('an expiry that settles the next query as well: the rest due still expire in the same firing', () => {
    t = setup();
    const ps = [1, 2, 3, 4].map((id) => t.inflight.add(q(id), 100));
    const { onDeadline } = t.inflight;
    t.inflight.onDeadline = (p, lateMs) => {
      onDeadline(p, lateMs);
      if (p === ps[0]) t.inflight.settle(ps[1]); // say its reply settled its neighbour
    };
    t.clock.tick(100);
    assert.deepEqual(t.expired.map(([id]) => id), [1, 3, 4]);
    assert.equal(t.inflight.size, 0);
  });

  it('an expiry callback that leaves its own query in the books but settles the next: the firing goes on and ends', () => {
    t = setup();
    const ps = [1, 2, 3, 4].map((id) => t.inflight.add(q(id), 100));
    t.inflight.onDeadline = (p, lateMs) => {
      t.expired.push([p.query.invokeId, lateMs]);
      if (p === ps[0]) t.inflight.settle(ps[1]);
      else t.inflight.settle(p);
    };
    t.clock.tick(100);
    assert.deepEqual(t.expired.map(([id]) => id), [1, 3, 4]);
    assert.equal(t.inflight.size, 1);
  });

  it('abortAll: every query settled without a reply, its backend call aborted, counted, the timer gone', () => {
    t = setup();
    const ps = [t.inflight.add(q(1), 100), t.inflight.add(q(2), 100)];
    for (const p of ps) p.dispatched({ signal: { aborted: false }, abort() { this.signal.aborted = true; } }); // the backend's handle, as the session gives it
    t.inflight.abortAll('lost_router_gone');
    assert.deepEqual(ps.map((p) => p.handle.signal.aborted), [true, true]);
    assert.deepEqual(t.counted, ['lost_router_gone', 'lost_router_gone']);
    assert.equal(t.clock.countTimers(), 0);
    t.clock.tick(200);
    assert.deepEqual(t.expired, []);
    assert.equal(t.inflight.settle(ps[0]), false);
  });
});

describe('InFlight and the garbage collector', () => {
  it('settled queries die young: a million turned over at 32 in flight promote almost nothing to the old generation', function () {
    this.timeout(60_000);
    // In a process of its own, under V8's --trace-gc-nvp: bytes promoted per query by the young
    // collections. The books kept in a Set promoted about 220 bytes a query here once a few
    // hundred thousand had gone through (in the gateway at 32 in flight, 360 KB a young
    // collection and a full collection every quarter second): a query, its tags and its view
    // waited for a full collection. A control that keeps each query longer than a young
    // collection's interval shows that the reading sees promotion (allocation-site pretenuring is
    // off, so that V8 does not allocate the control's queries in the old generation at once).
    const turnover = (keepLast) => {
      const script = `
        const { InFlight } = require(${JSON.stringify(path.join(__dirname, '../../../gateway/session/inflight'))});
        const books = new InFlight({ onDeadline() {}, onOutcome() {} });
        const ring = new Array(32).fill(null);
        const kept = new Array(${keepLast}).fill(null);
        for (let n = 0; n < 1000000; n++) {
          const slot = n % 32;
          if (ring[slot] !== null) books.settle(ring[slot]);
          const query = { invokeId: n, tags: [{ a: 'x' + n }, { b: [n] }] };
          ring[slot] = books.add(query, 250);
          if (kept.length > 0) kept[n % kept.length] = query;
          for (let k = 0; k < 5; k++) new Array(30).fill(k); // the rest of a query's allocation
        }
        for (const p of ring) books.settle(p);`;
      const flags = ['--trace-gc', '--trace-gc-nvp', '--no-allocation-site-pretenuring'];
      const out = execFileSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      const promoted = [...out.matchAll(/gc=s .*? promoted=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
      return promoted / 1_000_000;
    };
    const perQuery = turnover(0);
    assert.ok(perQuery < 60, `${perQuery.toFixed(1)} bytes promoted per query`);
    const control = turnover(100_000);
    assert.ok(control > 100, `the control promoted ${control.toFixed(1)} bytes per query`);
  });
});
