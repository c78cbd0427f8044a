'use strict';

// The connection log budget (gateway/session/connection-log.js) and the TLS handshakes in
// progress (gateway/tls-handshakes.js), each alone, with a fake clock.

const assert = require('node:assert/strict');
const sinon = require('sinon');
const { ConnectionLog, NOISE } = require('../../../gateway/session/connection-log');
const { PendingHandshakes } = require('../../../gateway/tls-handshakes');

/** A logger that keeps {level, message, meta, noise}. */
function recorder() {
  const lines = [];
  const at = (level) => (message, meta = {}) => lines.push({
    level, message, meta, noise: meta[NOISE] === true,
  });
  return {
    lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug'), isLevelEnabled: () => true,
  };
}

describe('connection log budget', () => {
  let clock;
  beforeEach(() => { clock = sinon.useFakeTimers(); });
  afterEach(() => clock.restore());

  it('per window: 5 connections of an address and 20 in all are logged; the rest summed up per kind at the window\'s end', () => {
    const log = recorder();
    const book = new ConnectionLog(log);
    for (let i = 0; i < 100; i++) book.accept('10.0.0.7').warn('connection refused: address not on the allowlist', { peer: `10.0.0.7:${i}` });
    for (let a = 0; a < 30; a++) book.accept(`10.0.1.${a}`).warn('connection refused: address not on the allowlist', {});
    assert.equal(log.lines.length, 5 + 15, 'the first 5 of 10.0.0.7, then 15 other addresses up to 20');
    assert.ok(log.lines.every((l) => l.noise));
    clock.tick(10_000);
    const summary = log.lines.slice(20);
    assert.equal(summary.length, 1);
    assert.equal(summary[0].message, '110 connections refused by the allowlist in the last 10 s, not logged one by one; e.g. 10.0.0.7, 10.0.1.15, 10.0.1.16');
    assert.deepEqual([summary[0].level, summary[0].meta.kind, summary[0].meta.count, summary[0].meta.addresses], ['warn', 'allowlist', 110, '16']);
    assert.ok(summary[0].noise);
    // A new window: the budget starts afresh.
    book.accept('10.0.0.7').warn('connection refused: address not on the allowlist', {});
    assert.equal(log.lines.length, 22);
  });

  it('a quiet connection whose session opens is logged from then on, within the sessions\' own budget; its warnings are real ones', () => {
    const log = recorder();
    const book = new ConnectionLog(log, { perSource: 1, inAll: 1 });
    book.accept('10.0.0.1').info('router connected', {});
    const quiet = book.accept('10.0.0.2');
    quiet.info('router connected', {});
    quiet.sessionOpened();
    quiet.info('session opened', {});
    quiet.warn('nothing received for 60000 ms (IdleTimeout); closing the connection', {});
    quiet.error('internal error while handling router data; closing the connection', {});
    const other = book.accept('10.0.0.3');
    other.sessionOpened(); // the sessions' budget (1) is spent
    other.info('session opened', {});
    assert.deepEqual(log.lines.map((l) => [l.message.slice(0, 20), l.noise]), [
      ['router connected', true], ['session opened', false], ['nothing received for', false], ['internal error while', false],
    ]);
    clock.tick(10_000);
    assert.deepEqual(log.lines.slice(4).map((l) => [l.meta.kind, l.meta.count, l.level]), [['connected', 1], ['opened', 1]].map((k) => [...k, 'info']));
  });

  it('errors are never held back, and close() writes what the window holds', () => {
    const log = recorder();
    const book = new ConnectionLog(log, { perSource: 0 });
    const c = book.accept('10.0.0.9');
    c.warn('no OPEN_REQ within 15000 ms; closing the connection', {});
    c.error('internal error while answering a query', {});
    assert.deepEqual(log.lines.map((l) => l.level), ['error']);
    book.close();
    assert.match(log.lines[1].message, /^1 connections closed without an OPEN_REQ in the last 10 s/);
    assert.equal(clock.countTimers(), 0);
  });
});

describe('TLS handshakes in progress', () => {
  let clock;
  beforeEach(() => { clock = sinon.useFakeTimers(); });
  afterEach(() => clock.restore());

  const socket = (name) => ({ name, destroyed: false, destroy() { this.destroyed = true; } });
  const make = (limits) => {
    const closed = [];
    const pending = new PendingHandshakes({
      limits: () => ({
        handshakeTimeoutMs: 5000, openTimeoutMs: 15_000, maxHandshakes: 4, maxHandshakesPerAddress: 3, ...limits,
      }),
      onClosed: (s, why) => closed.push(`${s.name} ${why}`),
    });
    return { pending, closed };
  };

  it('at maxHandshakes the oldest of the address holding the most is closed, never the lone router\'s', () => {
    const { pending, closed } = make();
    const router = socket('router');
    pending.add(socket('a1'), 'A');
    pending.add(router, 'R');
    pending.add(socket('a2'), 'A');
    pending.add(socket('b1'), 'B');
    pending.add(socket('b2'), 'B'); // full: A and B hold 2 each; A's oldest goes
    pending.add(socket('b3'), 'B'); // B holds 3 now
    pending.add(socket('c1'), 'C');
    assert.deepEqual(closed, ['a1 evicted', 'b1 evicted', 'b2 evicted']);
    assert.equal(router.destroyed, false);
    assert.equal(pending.size, 4);
  });

  it('at maxHandshakesPerAddress that address\'s oldest is closed; a finished handshake frees its place', () => {
    const { pending, closed } = make({ maxHandshakes: 100 });
    const s = [1, 2, 3, 4].map((i) => socket(`a${i}`));
    for (const x of s.slice(0, 3)) pending.add(x, 'A');
    pending.done(s[1]);
    pending.add(s[3], 'A');
    assert.deepEqual(closed, []);
    pending.add(socket('a5'), 'A');
    assert.deepEqual(closed, ['a1 evicted']);
  });

  it('each handshake is closed at handshakeTimeoutMs (openTimeoutMs if shorter), the oldest first, with one timer', () => {
    const { pending, closed } = make({ maxHandshakes: 100, maxHandshakesPerAddress: 100 });
    pending.add(socket('a'), 'A');
    clock.tick(1000);
    pending.add(socket('b'), 'B');
    const done = socket('c');
    pending.add(done, 'C');
    pending.done(done);
    assert.equal(clock.countTimers(), 1);
    clock.tick(3999);
    assert.deepEqual(closed, []);
    clock.tick(1);
    assert.deepEqual(closed, ['a timeout']);
    clock.tick(1000);
    assert.deepEqual(closed, ['a timeout', 'b timeout']);
    assert.equal(clock.countTimers(), 0);
    const short = make({ openTimeoutMs: 300 });
    short.pending.add(socket('d'), 'D');
    clock.tick(300);
    assert.deepEqual(short.closed, ['d timeout']);
  });
});
