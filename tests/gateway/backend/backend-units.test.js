'use strict';

// The backend side's parts alone: the top of the chain (layers/substitute.js over layers/cache.js)
// over a layer the test scripts, with the query's real handle and substitutes; backend health on a
// fake clock, and the allowlist.

const assert = require('node:assert/strict');
const sinon = require('sinon');
const { loadConfig } = require('../../../gateway/config');
const { Backend, QueryHandle } = require('../../../gateway/backend');
const { Substitute } = require('../../../gateway/backend/layers/substitute');
const { Cache } = require('../../../gateway/backend/layers/cache');
const { Substitutes } = require('../../../gateway/backend/substitutes');
const { ok, appError, hostError, REASON } = require('../../../gateway/backend/outcome');
const { BackendHealth } = require('../../../gateway/backend/health');
const { compileAllowlist } = require('../../../gateway/config/allowlist');

const ANSWER = { vars: { 1: 'gold' } };
const FALLBACK = { vars: { 1: 'default' } };

/**
 * Substitute over Cache over a scripted layer (below.script(query) -> outcome), with the answer
 * cache a Backend of these settings has; dispatch() as Backend.dispatch does for a query without
 * a route of its own.
 */
function resolverWith(overrides, script) {
  const config = loadConfig({ env: {}, overrides: { 'backend.url': 'http://127.0.0.1:9', ...overrides } });
  const backend = new Backend(config);
  const calls = [];
  const below = {
    script,
    dispatch(ctx) {
      calls.push(ctx.query.invokeId);
      return Promise.resolve(this.script(ctx.query));
    },
  };
  const chain = new Substitute(new Cache(below, { cache: backend.cache, owner: null }));
  const resolver = {
    below,
    dispatch(q, deadlineAt, group, handler, send = true) {
      const handle = new QueryHandle(chain, q, deadlineAt, group, handler, new Substitutes(config.availability, q, null));
      if (send) handle.start();
      return handle;
    },
    close: () => backend.close(),
  };
  return { resolver, calls };
}
const query = (invokeId, clid = '5551234') => ({ invokeId, subtype: 'cust', clid });
/** The outcome a session would get for q (its handler's one call). */
const resolve = (resolver, q) => new Promise((onOutcome) => { resolver.dispatch(q, Infinity, 1, { onOutcome }); });
/** A query whose deadline passed while it waited: its handle, the backend never asked. */
const unsent = (resolver, q) => resolver.dispatch(q, Infinity, 1, { onOutcome() {} }, false);

describe('Substitute and Cache layers (unit, scripted layer below)', () => {
  let clock;
  beforeEach(() => { clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['Date', 'performance'] }); });
  afterEach(async () => { clock.restore(); });

  it('a fresh cached answer answers without the backend; a missing key field bypasses the cache', async () => {
    const { resolver, calls } = resolverWith({ cache: { ttlMs: 1000 } }, () => ok(ANSWER));
    assert.deepEqual(await resolve(resolver, query(1)), ok(ANSWER));
    assert.deepEqual(await resolve(resolver, query(2)), ok(ANSWER, 'cache'));
    assert.deepEqual(calls, [1]);
    await resolve(resolver, query(3, '')); // no CLID: not one caller with every other
    await resolve(resolver, query(4, ''));
    assert.deepEqual(calls, [1, 3, 4]);
    await resolver.close();
  });

  it('past ttlMs the backend is asked; when it fails, the stale answer; when there is none, the fallback', async () => {
    let backendUp = true;
    const { resolver } = resolverWith({ cache: { ttlMs: 1000, staleIfErrorMs: 10_000 }, fallback: FALLBACK },
      () => (backendUp ? ok(ANSWER) : hostError(REASON.RESET, 'backend reset', true)));
    await resolve(resolver, query(1));
    backendUp = false;
    clock.tick(2000);
    assert.deepEqual(await resolve(resolver, query(2)), ok(ANSWER, 'stale'));
    assert.deepEqual(await resolve(resolver, query(3, '5550000')), ok(FALLBACK, 'fallback'), 'another caller: nothing cached');
    clock.tick(20_000);
    assert.deepEqual(await resolve(resolver, query(4)), ok(FALLBACK, 'fallback'), 'too old even to be stale');
    await resolver.close();
  });

  it('a 4xx stays an app error unless fallback.on4xx; a router gone gets no stand-in', async () => {
    const no = appError('no such customer', undefined, 404);
    let r = resolverWith({ fallback: FALLBACK }, () => no);
    assert.deepEqual(await resolve(r.resolver, query(1)), no);
    await r.resolver.close();
    r = resolverWith({ fallback: { ...FALLBACK, on4xx: true } }, () => no);
    assert.deepEqual(await resolve(r.resolver, query(1)), ok(FALLBACK, 'fallback'));
    await r.resolver.close();
    const gone = hostError(REASON.ABORTED, 'backend aborted');
    r = resolverWith({ fallback: FALLBACK }, () => gone);
    assert.deepEqual(await resolve(r.resolver, query(1)), gone);
    await r.resolver.close();
  });

  it('at the deadline with the backend silent: the stale answer kept for the query, else the fallback, else nothing', async () => {
    const { resolver } = resolverWith({ cache: { ttlMs: 1000 } }, () => ok(ANSWER));
    await resolve(resolver, query(1));
    clock.tick(2000);
    resolver.below.script = () => new Promise(() => {}); // never answers
    const p = resolver.dispatch(query(2), Infinity, 1, { onOutcome() {} });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(p.atDeadline(), ok(ANSWER, 'stale'));
    assert.equal(unsent(resolver, query(3)).atDeadline(), null);
    await resolver.close();
    const withFallback = resolverWith({ fallback: FALLBACK }, () => ok(ANSWER)).resolver;
    assert.deepEqual(unsent(withFallback, query(3)).atDeadline(), ok(FALLBACK, 'fallback'));
    await withFallback.close();
  });
});

describe('BackendHealth (unit, fake clock)', () => {
  let clock;
  beforeEach(() => { clock = sinon.useFakeTimers({ now: 5_000_000 }); });
  afterEach(() => clock.restore());

  function health(options = {}) {
    const lines = [];
    const log = {
      warn: (message, meta) => lines.push({ level: 'warn', message, meta }),
      info: (message, meta) => lines.push({ level: 'info', message, meta }),
    };
    const board = new BackendHealth({ log, ...options });
    const h = board.lane('http://crm:8080', 'cust');
    const up = [];
    const change = board.changed.bind(board);
    board.changed = (lane) => { change(lane); up.push(board.state === 'reachable' ? 1 : 0); };
    return {
      h, lines, up, board,
    };
  }
  const pick = (j) => [j.state, j.lastState, j.lastQueryAt, j.evidenceAgeS];

  it('five failures in a row make it failing, the first answer reachable again; a failure between answers does not', () => {
    const { h, lines, up } = health({ routerGets: 'the fallback answer' });
    for (let i = 0; i < 4; i++) h.failure('reset');
    h.success();
    for (let i = 0; i < 4; i++) h.failure('reset');
    assert.equal(h.state, 'reachable');
    h.failure('unreachable: ECONNREFUSED 127.0.0.1:9');
    assert.equal(h.state, 'failing');
    assert.equal(h.toJSON().lastError, 'unreachable: ECONNREFUSED 127.0.0.1:9');
    assert.equal(lines[0].level, 'warn');
    assert.match(lines[0].message, /^backend failing: http:\/\/crm:8080 \(subtype cust\): 5 queries in a row got no answer \(last: unreachable: ECONNREFUSED 127\.0\.0\.1:9\); the router gets the fallback answer$/);
    clock.tick(1500);
    for (let i = 0; i < 3; i++) h.failure('reset'); // failing meanwhile: one line was enough
    h.success();
    assert.equal(h.state, 'reachable');
    assert.deepEqual(up, [0, 1]);
    // The good news when it happens, at info, not folded into the next line 10 s later.
    assert.equal(lines.length, 2);
    assert.equal(lines[1].level, 'info');
    assert.equal(lines[1].message, 'backend reachable again: http://crm:8080 (subtype cust)');
    assert.deepEqual(lines[1].meta, {
      origin: 'http://crm:8080', route: 'cust', failedQueries: 3, failingForMs: 1500,
    });
  });

  it('a flapping backend logs at most one failing line per 10 s, and the next line says how many changes it folded in', () => {
    const { h, lines } = health();
    const flap = () => { for (let i = 0; i < 5; i++) h.failure('reset'); h.success(); };
    flap(); // failing (logged), reachable (logged at once)
    flap(); // failing again within 10 s: folded, and back before anyone was told
    flap();
    assert.deepEqual(lines.map((l) => l.message.split(':')[0]), ['backend failing', 'backend reachable again']);
    for (let i = 0; i < 5; i++) h.failure('reset'); // failing, still within the 10 s
    clock.tick(10_000); // the quiet spell: where it ended up, with the changes it folded in
    assert.equal(lines.length, 3);
    assert.match(lines[2].message, /^backend failing/);
    assert.equal(lines[2].meta.changesNotLogged, 5);
    h.close();
  });

  it('one origin failing is not masked by another that answers: the origin, the process and the failing line say so', () => {
    const { board, lines } = health();
    const good = board.lane('http://good:1', 'cust');
    const bad = board.lane('http://bad:1', 'cust');
    for (let i = 0; i < 10; i++) {
      good.success();
      bad.failure('unreachable: ECONNREFUSED');
    }
    assert.equal(board.state, 'failing');
    assert.equal(board.originState('http://good:1'), 'reachable');
    assert.equal(board.originState('http://bad:1'), 'failing');
    assert.deepEqual(board.toJSON().failing, [{ origin: 'http://bad:1', route: 'cust' }]);
    assert.equal(lines.length, 1);
    assert.match(lines[0].message, /^backend failing: http:\/\/bad:1 \(subtype cust\): .*; http:\/\/good:1 still answering$/);
    assert.deepEqual(lines[0].meta.answering, ['http://good:1']);
  });

  it('a state judged by queries older than 60 s is shown as idle, with what they said and how old they are', () => {
    const { board } = health();
    const slow = board.lane('http://crm:8080', 'slow');
    const quick = board.lane('http://crm:8080', 'quick');
    assert.deepEqual(pick(board.toJSON()), ['idle', 'reachable', null, null], 'no query yet: nothing to judge by');
    for (let i = 0; i < 5; i++) slow.failure('timeout');
    const failedAt = new Date(Date.now()).toISOString();
    clock.tick(59_000);
    assert.deepEqual(pick(board.toJSON()), ['failing', 'failing', failedAt, 59]);
    clock.tick(1000); // 60 s without a query: the failure is old news
    const json = board.toJSON();
    assert.deepEqual(pick(json), ['idle', 'failing', failedAt, 60]);
    assert.deepEqual(json.failing, [], 'nothing fails now that anyone has seen');
    assert.deepEqual(pick(board.originsJSON()['http://crm:8080']), ['idle', 'failing', failedAt, 60]);
    const route = (name) => board.originsJSON()['http://crm:8080'].routes.find((r) => r.route === name);
    assert.deepEqual(pick(route('slow')), ['idle', 'failing', failedAt, 60]);
    assert.equal(board.state, 'failing', 'the verdict (ged145_backend_up) is kept');
    // Another subtype answers: reachable now, on that fresh evidence; the old lane stays idle.
    quick.success();
    assert.deepEqual(pick(board.toJSON()), ['reachable', 'failing', new Date(Date.now()).toISOString(), 0]);
    assert.deepEqual([route('slow').state, route('quick').state, route('cust').state], ['idle', 'reachable', 'idle']);
    // The old lane's next failure goes on from its run: failing now, at once.
    slow.failure('timeout');
    assert.deepEqual([board.toJSON().state, slow.consecutiveFailures], ['failing', 6]);
  });
});

describe('engine errors (unit)', () => {
  it('a request aborted at its deadline has no cause beyond its reason; a refused one names the address', () => {
    const { EngineError } = require('../../../gateway/backend/errors');
    const { DEADLINE } = require('../../../gateway/backend/abort');
    assert.equal(new EngineError(REASON.DEADLINE, DEADLINE).detail, null, 'not "ERR_GED145_DEADLINE" as the last error on /health and the page');
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', syscall: 'connect', address: '127.0.0.1', port: 9 });
    assert.equal(new EngineError(REASON.UNREACHABLE, refused).detail, 'ECONNREFUSED 127.0.0.1:9');
  });
});

describe('allowlist (unit)', () => {
  it('addresses and CIDR ranges, IPv4 and IPv6; an IPv4-mapped address is the same address', () => {
    const list = compileAllowlist(['10.20.0.11', '192.168.0.0/16', '::1', 'fd00::/8', '::ffff:172.16.0.0/108']);
    for (const a of ['10.20.0.11', '::ffff:10.20.0.11', '192.168.200.1', '::1', 'fd12::5', '172.16.3.4']) assert.equal(list.allows(a), true, a);
    for (const a of ['10.20.0.12', '192.169.0.1', '::2', 'fe80::1', '172.32.0.1', undefined, 'not-an-ip']) assert.equal(list.allows(a), false, String(a));
  });

  it('refuses an entry that is neither an address nor a range, naming it', () => {
    assert.throws(() => compileAllowlist(['10.0.0.0/33']), /'10\.0\.0\.0\/33' has a bad prefix length/);
    assert.throws(() => compileAllowlist(['router-a']), /'router-a' is not an IP address or CIDR range/);
    assert.throws(() => compileAllowlist([5]), /5 is not an address/);
  });
});
