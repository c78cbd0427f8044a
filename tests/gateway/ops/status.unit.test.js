'use strict';

// The status page's history alone (gateway/ops/status.js): per-second counts, latency buckets by
// outcome and subtype, a five-minute window, and a cluster primary's sum of its workers.

const assert = require('node:assert/strict');
const { History, mergeStatus, LATENCY_BOUNDS_MS } = require('../../../gateway/ops/status');

describe('status history (unit)', () => {
  it('counts each second by outcome and subtype, with latency buckets, and keeps five minutes', () => {
    let now = 1_000_000;
    const h = new History(300, () => now);
    h.query('lookup', 'ok', 0.004); // 4 ms: the 5 ms bucket
    h.query('lookup', 'fallback', 0.26);
    h.backend('2xx', 0.003);
    now += 1000;
    h.query('balance', 'ok', 0.0009);
    const j = h.toJSON();
    assert.equal(j.bounds.at(-1), null, 'the last bucket takes the rest');
    assert.deepEqual(j.seconds.map((s) => [s.t, { ...s.outcomes }, { ...s.subtypes }]), [
      [1000, { ok: 1, fallback: 1 }, { lookup: 2 }],
      [1001, { ok: 1 }, { balance: 1 }],
    ]);
    const [first] = j.seconds;
    assert.equal(first.byOutcome.ok[LATENCY_BOUNDS_MS.indexOf(5)], 1);
    assert.equal(first.byOutcome.fallback[LATENCY_BOUNDS_MS.indexOf(300)], 1);
    assert.equal(first.bySubtype.lookup.reduce((a, b) => a + b, 0), 2);
    assert.deepEqual({ ...first.backend }, { '2xx': 1 });
    now += 300_000;
    h.query('lookup', 'ok', 0.001);
    assert.deepEqual(h.toJSON().seconds.map((s) => s.t), [1301], 'older than five minutes: gone');
  });

  it('a subtype named "__proto__" or "constructor" is counted like any other and touches no prototype', () => {
    const h = new History(300, () => 7_000_000);
    for (const subtype of ['__proto__', 'constructor', '__proto__']) h.query(subtype, 'ok', 0.001);
    const worker = { processes: [{ pid: 2 }], sessions: [], refused: {}, history: JSON.parse(JSON.stringify(h.toJSON())), backend: {}, warnings: [] };
    const merged = mergeStatus({ processes: [{ pid: 1 }], warnings: [] }, [worker, worker]);
    assert.equal(Object.prototype[0], undefined);
    assert.equal(Object.keys(Object.prototype).length, 0);
    assert.equal(merged.history.seconds[0].subtypes.__proto__, 4);
    assert.equal(merged.history.seconds[0].subtypes.constructor, 2);
    assert.equal(merged.history.seconds[0].bySubtype.__proto__.reduce((a, b) => a + b, 0), 4);
    assert.equal({}.toString, Object.prototype.toString);
  });

  it('a primary adds its workers\' seconds together and lists every process and session', () => {
    const worker = (pid, ok) => {
      const h = new History(300, () => 5_000_000);
      for (let i = 0; i < ok; i++) h.query('lookup', 'ok', 0.002);
      return {
        processes: [{ role: 'gateway', pid }],
        sessions: [{ peer: `p${pid}` }],
        refused: { allowlist: 1 },
        history: h.toJSON(),
        backend: { state: 'reachable' },
        warnings: [],
      };
    };
    const merged = mergeStatus({ processes: [{ role: 'primary', pid: 1 }], warnings: [] }, [worker(2, 3), worker(3, 4)]);
    assert.deepEqual(merged.processes.map((p) => p.pid), [1, 2, 3]);
    assert.deepEqual(merged.sessions, [{ peer: 'p2', pid: 2 }, { peer: 'p3', pid: 3 }]);
    assert.deepEqual({ ...merged.refused }, { allowlist: 2 });
    assert.equal(merged.history.seconds.length, 1);
    assert.deepEqual({ ...merged.history.seconds[0].outcomes }, { ok: 7 });
    assert.equal(merged.history.seconds[0].byOutcome.ok.reduce((a, b) => a + b, 0), 7);
    assert.deepEqual(merged.backend.map((b) => b.pid), [2, 3]);
  });
});
