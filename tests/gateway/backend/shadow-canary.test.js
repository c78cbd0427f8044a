'use strict';

/* global document -- page.evaluate callbacks run in the browser */

// Shadow traffic and canaries against real parts: the REST simulator as the live backend, a small
// HTTP server on 127.0.0.1 as the candidate (the same answer for some callers, another for others,
// a 500 for some and no answer at all for the rest), a real gateway and router sessions on real
// sockets. What is asserted is what the router and the operator see: each query answered once
// with the live answer, the shadow counts exact per result and per field, the candidate never
// holding more shadow calls than the cap, and a canary answering exactly what it should until it
// rolls itself back.

const assert = require('node:assert/strict');
const http = require('node:http');
const dc = require('node:diagnostics_channel');
const { performance } = require('node:perf_hooks');
const fs = require('node:fs');
const path = require('node:path');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { tmpDir } = require('../../helpers/tmp');
const { WireClient } = require('../../helpers/wire');
const { callShare, SALT } = require('../../../gateway/call-share');
const { launchChromium } = require('../../helpers/chromium');

const PER_KIND = 8; // 4 kinds: 32 shadow calls at once, the cap
const KINDS = ['same', 'diff', 'fail', 'hang'];

/** GET on the admin port: {status, body}. */
function get(port, path) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

/** A metric's samples from /metrics text: labels as a string -> value. */
function samples(text, name) {
  const out = {};
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** The candidate: its answer chosen by the CLID's first word; `hanging` open requests are counted. */
async function startCandidate() {
  const state = { open: 0, maxOpen: 0, mode: 'by-clid' };
  const server = await startTestBackend((req, res, entry) => {
    const q = JSON.parse(entry.body || '{}');
    const kind = state.mode === 'by-clid' ? String(q.clid || '').split('-')[0] : state.mode;
    const reply = (status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    switch (kind) {
      case 'same': return reply(200, { vars: q.vars || {}, ecc: q.ecc || {}, eccArrays: q.eccArrays || [] });
      case 'diff': return reply(200, { vars: { ...q.vars, 2: 'changed' } });
      case 'canary': return reply(200, { vars: { ...q.vars, 9: 'candidate' } });
      case 'fail': return reply(500, { error: 'candidate broken' });
      default: // hang
        state.open++;
        state.maxOpen = Math.max(state.maxOpen, state.open);
        res.on('close', () => { state.open--; });
        return undefined;
    }
  });
  return { server, state };
}

/** Asks queries [{id, fields}] on one session; resolves with the replies by InvokeID once each is answered. */
async function ask(c, queries, already) {
  for (const { id, fields } of queries) c.query(id, fields);
  await c.waitForCount(already + queries.length, 30_000);
  const byId = new Map();
  for (const m of c.messages.slice(already)) {
    assert.ok(!byId.has(m.invokeId), `InvokeID ${m.invokeId} answered twice`);
    byId.set(m.invokeId, m);
  }
  return byId;
}

const shape = (m) => ({ type: m.type, status: m.status, vars: m.vars, error: m.error });

/** A CSV's lines (no quoted fields in these) as objects by column name. */
function csvRows(text) {
  const [head, ...lines] = text.trim().split('\r\n').map((l) => l.split(','));
  return lines.map((cells) => Object.fromEntries(head.map((name, i) => [name, cells[i]])));
}

/** The half-hour CSV's columns of one side and subtype, added over the half hours (a test may cross :00 or :30). */
async function halfHourOf(adminPort, side, subtype) {
  const rows = csvRows((await get(adminPort, '/report/half-hour.csv')).body).filter((r) => r.Side === side && r.Subtype === subtype);
  const sum = (col) => rows.reduce((n, r) => n + Number(r[col]), 0);
  return {
    requests: sum('RequestsToHalf'), errors: sum('ErrorsToHalf'), canary: sum('CanaryToHalf'), canaryErrors: sum('CanaryErrorsToHalf'),
  };
}

describe('shadow traffic', function () {
  this.timeout(120_000);
  let candidate;
  let stack;
  let plain;
  const results = []; // every ged145:shadow:result message, with when it came
  const onResult = (m) => results.push({ ...m, at: performance.now() });

  const queries = KINDS.flatMap((kind, k) => Array.from({ length: PER_KIND }, (_, i) => {
    const id = 10 + k * PER_KIND + i;
    return { id, kind, fields: { subtype: 'echo', clid: `${kind}-${i}`, vars: { 1: `v${id}` } } };
  }));

  before(async () => {
    candidate = await startCandidate();
    const gateway = {
      deadlineMs: 1000,
      candidates: { v2: { backend: candidate.server.url } },
      routes: { echo: { shadow: { candidate: 'v2', sample: 1 } } },
    };
    stack = await startStack({ gateway });
    plain = await startStack({ gateway: { deadlineMs: 1000 } });
    dc.subscribe('ged145:shadow:result', onResult);
  });

  after(async () => {
    dc.unsubscribe('ged145:shadow:result', onResult);
    if (stack) await stack.stop();
    if (plain) await plain.stop();
    if (candidate) await candidate.server.close();
  });

  it('answers the router exactly as without shadow, before the candidate answers, and counts each result and field exactly', async () => {
    const c = await WireClient.connect(stack.port);
    await c.open();
    const p = await WireClient.connect(plain.port);
    await p.open();
    const shadowed = await ask(c, queries, 1);
    const unshadowed = await ask(p, queries, 1);
    for (const { id } of queries) assert.deepEqual(shape(shadowed.get(id)), shape(unshadowed.get(id)), `InvokeID ${id}`);
    for (const { id } of queries) assert.equal(shadowed.get(id).type, 'QUERY_RESP');

    const deadline = Date.now() + 20_000;
    while (results.filter((r) => r.gateway === stack.gateway).length < queries.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const mine = results.filter((r) => r.gateway === stack.gateway);
    assert.equal(mine.length, queries.length);
    const expected = {
      same: 'same', diff: 'different', fail: 'candidate_failed', hang: 'candidate_failed',
    };
    for (const { id, kind } of queries) {
      const r = mine.find((m) => m.query.invokeId === id);
      assert.equal(r.result, expected[kind], `InvokeID ${id} (${kind})`);
      if (kind === 'diff') assert.deepEqual(r.differences, [{ field: 'vars.2', live: null, candidate: 'changed' }]);
      // The router had its answer before the candidate's outcome was known: the shadow call waits for nobody.
      assert.ok(shadowed.get(id).receivedAt < r.at, `InvokeID ${id} answered after its shadow call ended`);
    }

    const metrics = (await get(stack.adminPort, '/metrics')).body;
    assert.deepEqual(samples(metrics, 'ged145_shadow_total'), {
      'subtype="echo",candidate="v2",result="same"': PER_KIND,
      'subtype="echo",candidate="v2",result="different"': PER_KIND,
      'subtype="echo",candidate="v2",result="candidate_failed"': 2 * PER_KIND,
    });
    assert.deepEqual(samples(metrics, 'ged145_shadow_differences_total'), { 'subtype="echo",candidate="v2",field="vars.2"': PER_KIND });

    const status = JSON.parse((await get(stack.adminPort, '/status')).body);
    assert.equal(status.shadow.last.length, PER_KIND);
    assert.deepEqual(status.shadow.last[0].differences, [{ field: 'vars.2', live: null, candidate: 'changed' }]);
    const csv = (await get(stack.adminPort, '/report/shadow.csv')).body.trim().split('\r\n');
    assert.equal(csv[0], 'DateTime,Subtype,Candidate,Same,Different,CandidateFailed,LiveFailed,Dropped,Canary,DifferentFields,DateTimeUTC');
    assert.equal(csv.length, 2);
    assert.deepEqual(csv[1].split(',').slice(1, 10), ['echo', 'v2', '8', '8', '16', '0', '0', '0', `vars.2=${PER_KIND}`]);
    c.close();
    p.close();
  });

  it('keeps at most 32 shadow calls out while the candidate hangs, and counts every one it drops', async () => {
    const before = results.filter((r) => r.gateway === stack.gateway).length;
    candidate.state.mode = 'hang';
    candidate.state.maxOpen = 0;
    const c = await WireClient.connect(stack.port);
    await c.open();
    const TOTAL = 400;
    const burst = Array.from({ length: TOTAL }, (_, i) => ({ id: 1000 + i, fields: { subtype: 'echo', clid: `hang-${i}`, vars: { 1: `h${i}` } } }));
    let answered = 1;
    for (let i = 0; i < TOTAL; i += 100) {
      const replies = await ask(c, burst.slice(i, i + 100), answered);
      answered += 100;
      for (const m of replies.values()) assert.equal(m.type, 'QUERY_RESP'); // the live answer, every time
    }
    const deadline = Date.now() + 20_000;
    while (results.filter((r) => r.gateway === stack.gateway).length - before < TOTAL && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const mine = results.filter((r) => r.gateway === stack.gateway).slice(before);
    assert.equal(mine.length, TOTAL);
    const dropped = mine.filter((r) => r.result === 'dropped').length;
    const failed = mine.filter((r) => r.result === 'candidate_failed').length;
    assert.equal(dropped + failed, TOTAL);
    assert.ok(dropped > 0, 'a burst of 100 over a hanging candidate drops what is over the cap');
    assert.ok(candidate.state.maxOpen <= 32, `the candidate held ${candidate.state.maxOpen} shadow calls at once`);
    const metrics = (await get(stack.adminPort, '/metrics')).body;
    assert.equal(samples(metrics, 'ged145_shadow_total')['subtype="echo",candidate="v2",result="dropped"'], dropped);
    c.close();
    candidate.state.mode = 'by-clid';
  });
});

describe('canary', function () {
  this.timeout(120_000);
  const DN = '8005550100';
  const DAY = 20_140;
  let candidate;
  let stack;
  const decisions = path.join(tmpDir(), 'decisions.jsonl');

  before(async () => {
    candidate = await startCandidate();
    candidate.state.mode = 'canary';
    stack = await startStack({
      gateway: {
        deadlineMs: 1000,
        decisions: { file: decisions, sample: 1 },
        candidates: { v2: { backend: candidate.server.url } },
        routes: {
          echo: {
            canary: {
              candidate: 'v2', dialedNumbers: [DN], percent: 30, rollback: { failureRate: 0.05, minQueries: 20, windowS: 60 },
            },
          },
        },
      },
    });
  });

  after(async () => {
    if (stack) await stack.stop();
    if (candidate) await candidate.server.close();
  });

  it('answers the listed DN_STRINGs and its percent of the others from the candidate, the same on both router sides', async () => {
    const sides = [];
    for (const side of ['A', 'B']) {
      const c = await WireClient.connect(stack.port);
      await c.open({ config: side });
      sides.push(c);
    }
    const queries = Array.from({ length: 300 }, (_, i) => ({
      id: 100 + i,
      fields: {
        subtype: 'echo', routerCallDay: DAY, routerCallKey: 5000 + i, dn: i % 10 === 0 ? DN : '8005550199', vars: { 1: `v${i}` },
      },
    }));
    const a = new Map();
    const b = new Map();
    for (let i = 0; i < queries.length; i += 50) {
      const [ra, rb] = await Promise.all(sides.map((c) => ask(c, queries.slice(i, i + 50), 1 + i)));
      for (const [id, m] of ra) a.set(id, m);
      for (const [id, m] of rb) b.set(id, m);
    }
    const fromCandidate = (m) => m.type === 'QUERY_RESP' && m.vars !== undefined && m.vars[9] === 'candidate';
    let others = 0;
    let othersPicked = 0;
    for (const { id, fields } of queries) {
      const listed = fields.dn === DN;
      const picked = listed || callShare(DAY, fields.routerCallKey, SALT.CANARY) < 0.3;
      assert.equal(fromCandidate(a.get(id)), picked, `InvokeID ${id} on side A`);
      assert.equal(fromCandidate(b.get(id)), picked, `InvokeID ${id} on side B: ${JSON.stringify(shape(b.get(id)))}`);
      if (!listed) {
        others++;
        if (picked) othersPicked++;
      }
    }
    assert.ok(othersPicked / others > 0.2 && othersPicked / others < 0.4, `percent 30 picked ${othersPicked} of ${others}`);
    const metrics = (await get(stack.adminPort, '/metrics')).body;
    assert.equal(samples(metrics, 'ged145_canary_total')['subtype="echo",candidate="v2"'], 2 * (othersPicked + queries.length / 10));
    // The decision log says which answers were the candidate's.
    const deadline = Date.now() + 10_000;
    let records = [];
    while (records.length < 2 * queries.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      records = fs.existsSync(decisions) ? fs.readFileSync(decisions, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
    }
    assert.equal(records.length, 2 * queries.length);
    for (const r of records) {
      const picked = r.query.dn === DN || callShare(DAY, r.routerCallKey, SALT.CANARY) < 0.3;
      assert.equal(r.source, picked ? 'canary' : 'backend', `record of RouterCallKey ${r.routerCallKey}`);
    }
    // The half-hour view marks them per side, beside the router's counts, which still hold every query.
    for (const side of ['A', 'B']) {
      assert.deepEqual(await halfHourOf(stack.adminPort, side, 'echo'), {
        requests: queries.length, errors: 0, canary: othersPicked + queries.length / 10, canaryErrors: 0,
      }, `side ${side}`);
    }
    for (const c of sides) c.close();
  });

  it('rolls itself back when the candidate starts failing, and the router sees no candidate failure after', async () => {
    candidate.state.mode = 'fail';
    const c = await WireClient.connect(stack.port);
    await c.open();
    const seen = [];
    for (let i = 0; i < 60; i++) {
      const id = 2000 + i;
      const replies = await ask(c, [{ id, fields: { subtype: 'echo', routerCallKey: id, dn: DN, vars: { 1: `r${i}` } } }], 1 + i);
      seen.push(replies.get(id));
    }
    const firstLive = seen.findIndex((m) => m.type === 'QUERY_RESP');
    assert.ok(firstLive > 0, 'the candidate answered (and failed) first');
    assert.ok(seen.slice(0, firstLive).every((m) => m.type === 'FAILURE_CONF'));
    assert.ok(seen.slice(firstLive).every((m) => m.type === 'QUERY_RESP' && m.vars[1] === `r${seen.indexOf(m)}` && m.vars[9] === undefined),
      'after the rollback every query has the live answer');
    const status = JSON.parse((await get(stack.adminPort, '/status')).body);
    assert.equal(status.backend.canaries.echo.state, 'rolled_back');
    assert.match(status.backend.canaries.echo.reason, /failed \d+ of \d+ queries/);
    // The candidate's failures are the router's errors, and the half-hour view says they were the canary's.
    assert.deepEqual(await halfHourOf(stack.adminPort, 'test', 'echo'), {
      requests: seen.length, errors: firstLive, canary: firstLive, canaryErrors: firstLive,
    });
    const lines = stack.log.lines.filter((l) => /canary of routes\.echo rolled back/.test(l.message));
    assert.equal(lines.length, 1);
    const metrics = (await get(stack.adminPort, '/metrics')).body;
    assert.equal(samples(metrics, 'ged145_canary_rollbacks_total')['subtype="echo",candidate="v2"'], 1);
    c.close();
  });

  it("shows each side's canary queries and errors in the status page's half-hour table (Chromium)", async () => {
    const expected = {};
    for (const side of ['A', 'B', 'test']) {
      const { canary, canaryErrors } = await halfHourOf(stack.adminPort, side, 'echo');
      expected[side] = `${canary} / ${canaryErrors}`;
    }
    assert.notEqual(expected.test, '0 / 0', 'the rollback test left failures of the canary');
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`http://127.0.0.1:${stack.adminPort}/`);
      await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 1, null, { timeout: 10_000 });
      const table = await page.evaluate(() => [...document.querySelectorAll('#half-hours tr')].map((tr) => [...tr.children].map((td) => td.textContent)));
      assert.deepEqual(problems, []);
      const column = table[0].indexOf('canary / errors');
      assert.ok(column > 0, JSON.stringify(table[0]));
      // A half hour that started during the test has rows of its own: the newest half hour is enough when it holds every side.
      const shown = Object.fromEntries(table.slice(1).filter((r) => r[0] === table[1][0]).map((r) => [r[1], r[column]]));
      if (Object.keys(shown).length === 3) assert.deepEqual(shown, expected);
      else assert.ok(Object.values(shown).some((v) => v !== '0 / 0'), JSON.stringify(table));
    } finally {
      await browser.close();
    }
  });
});
