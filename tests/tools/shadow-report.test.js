'use strict';

// ged145 shadow-report as a user runs it: a real child process asking a real gateway's admin port
// on 127.0.0.1, whose routes shadow a candidate (a small HTTP server here that answers the same,
// differently or with a 500 by the CLID's first word) and run a canary on it, the live backend
// being the REST simulator. What it prints is checked against the queries sent; a saved CSV is
// read the same way; a gateway with nothing to report, one that is not there, and a file that is
// not a shadow report each get one line and exit 1.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { startStack, startTestBackend } = require('../helpers/stack');
const { runCli } = require('../helpers/spawn');
const { tmpDir } = require('../helpers/tmp');
const { WireClient } = require('../helpers/wire');

const get = async (port, p) => (await fetch(`http://127.0.0.1:${port}${p}`)).text();

/** The candidate: the same answer as the live echo, vars.2 changed (with the CLID in it: caller data), or a 500. */
function startCandidate() {
  return startTestBackend((req, res, entry) => {
    const q = JSON.parse(entry.body || '{}');
    const reply = (status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    switch (String(q.clid || '').split('-')[0]) {
      case 'diff': return reply(200, { vars: { ...q.vars, 2: `changed for ${q.clid}` } });
      case 'fail': return reply(500, { error: 'candidate broken' });
      default: return reply(200, { vars: q.vars || {}, ecc: q.ecc || {}, eccArrays: q.eccArrays || [] });
    }
  });
}

/** A port on 127.0.0.1 that nothing listens on (bound, then closed). */
async function closedPort() {
  const server = net.createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** The CSV's count columns summed over its lines: waits until the shadow calls have all ended. */
async function waitForShadow(adminPort, total) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const lines = (await get(adminPort, '/report/shadow.csv')).trim().split('\r\n').slice(1);
    const seen = lines.reduce((n, l) => n + l.split(',').slice(3, 7).reduce((a, b) => a + Number(b), 0), 0);
    if (seen >= total || Date.now() > deadline) return seen;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('ged145 shadow-report', function () {
  this.timeout(120_000);
  let candidate;
  let stack;
  let plain;
  const dir = tmpDir();

  before(async () => {
    candidate = await startCandidate();
    stack = await startStack({
      gateway: {
        deadlineMs: 2000,
        'log.redact': true,
        candidates: { v2: { backend: candidate.url } },
        routes: {
          echo: { shadow: { candidate: 'v2', sample: 1 } },
          fail: { shadow: { candidate: 'v2', sample: 1 } }, // the live route fails: nothing to compare with
          'customer.lookup': {
            canary: {
              candidate: 'v2', dialedNumbers: [], percent: 100, rollback: { failureRate: 0.5, minQueries: 1000, windowS: 60 },
            },
          },
        },
      },
    });
    plain = await startStack();
    const c = await WireClient.connect(stack.port);
    await c.open();
    const queries = [
      ...Array.from({ length: 6 }, (_, i) => ({ subtype: 'echo', clid: `same-${i}`, vars: { 1: `s${i}` } })),
      ...Array.from({ length: 3 }, (_, i) => ({ subtype: 'echo', clid: `diff-${i}`, vars: { 1: `d${i}` } })),
      { subtype: 'echo', clid: 'fail-0', vars: { 1: 'f' } },
      ...Array.from({ length: 2 }, (_, i) => ({ subtype: 'fail', clid: `same-${i}` })),
      ...Array.from({ length: 4 }, (_, i) => ({ subtype: 'customer.lookup', clid: `same-${i}`, routerCallKey: 100 + i })),
    ];
    queries.forEach((fields, i) => c.query(10 + i, fields));
    await c.waitForCount(1 + queries.length, 30_000);
    c.close();
    assert.equal(await waitForShadow(stack.adminPort, 12), 12);
  });

  after(async () => {
    if (stack) await stack.stop();
    if (plain) await plain.stop();
    if (candidate) await candidate.close();
  });

  const EXPECTED = [
    {
      subtype: 'customer.lookup', candidate: 'v2', compared: 0, same: 0, different: 0, candidateFailed: 0, liveFailed: 0, dropped: 0, canary: 4, fields: {},
    },
    {
      subtype: 'echo', candidate: 'v2', compared: 10, same: 6, different: 3, candidateFailed: 1, liveFailed: 0, dropped: 0, canary: 0, fields: { 'vars.2': 3 },
    },
    {
      subtype: 'fail', candidate: 'v2', compared: 0, same: 0, different: 0, candidateFailed: 0, liveFailed: 2, dropped: 0, canary: 0, fields: {},
    },
  ];

  it('prints per subtype and candidate what was compared, the shares, the canary answers, the fields and the last differences, redacted', async () => {
    const { code, out, err } = await runCli(['shadow-report', '--admin', `127.0.0.1:${stack.adminPort}`]);
    assert.equal(code, 0, err);
    assert.equal(err, '');
    const lines = out.split('\n');
    // One half hour, or two when the queries crossed :00 or :30.
    const start = '\\d{4}-\\d\\d-\\d\\d \\d\\d:[03]0';
    assert.match(lines[0], new RegExp(`^http://127\\.0\\.0\\.1:${stack.adminPort}/report/shadow\\.csv: `
      + `(1 half hour, starting ${start}|2 half hours, the first starting ${start}, the last ${start}) \\(the gateway's local time\\)$`));
    const row = (subtype) => lines.find((l) => l.startsWith(`${subtype} `)).trim().split(/\s{2,}/);
    assert.deepEqual(lines[2].split(/\s{2,}/), ['subtype', 'candidate', 'compared', 'same', 'different', 'candidate failed', 'live failed', 'dropped',
      'canary answers']);
    assert.deepEqual(row('echo'), ['echo', 'v2', '10', '6', '3 (30.0 %)', '1 (10.0 %)', '0', '0', '0']);
    assert.deepEqual(row('fail'), ['fail', 'v2', '0', '0', '0', '0', '2', '0', '0']);
    assert.deepEqual(row('customer.lookup'), ['customer.lookup', 'v2', '0', '0', '0', '0', '0', '0', '4']);
    assert.ok(lines.includes('  most different: vars.2 (3)'), out);
    // The three differences from /status, newest first, each field with the caller's CLID hidden as the gateway hid it.
    const fields = lines.filter((l) => l.startsWith('    vars.2: '));
    assert.equal(fields.length, 3, out);
    for (const l of fields) assert.equal(l, "    vars.2: live (none), candidate 'changed for [redacted]'");
    assert.ok(!/diff-\d/.test(out), 'no CLID the router sent is printed');
  });

  it('--json gives the same figures; --file reads a saved CSV alike', async () => {
    const fromAdmin = await runCli(['shadow-report', '--admin', `http://127.0.0.1:${stack.adminPort}/`, '--json']);
    assert.equal(fromAdmin.code, 0, fromAdmin.err);
    const viaAdmin = JSON.parse(fromAdmin.out);
    assert.deepEqual(viaAdmin.rows, EXPECTED);
    assert.ok(viaAdmin.halfHours.count === 1 || viaAdmin.halfHours.count === 2, JSON.stringify(viaAdmin.halfHours));
    assert.equal(viaAdmin.last.length, 3);

    const file = path.join(dir, 'shadow.csv');
    fs.writeFileSync(file, await get(stack.adminPort, '/report/shadow.csv'));
    const fromFile = await runCli(['shadow-report', '--file', file, '--json']);
    assert.equal(fromFile.code, 0, fromFile.err);
    const viaFile = JSON.parse(fromFile.out);
    assert.deepEqual(viaFile.rows, EXPECTED);
    assert.equal(viaFile.last, null, 'a saved CSV has no last differences');
    const text = await runCli(['shadow-report', '--file', file]);
    assert.equal(text.code, 0);
    assert.match(text.out, /^echo\s+v2\s+10\s+6\s+3 \(30\.0 %\)/m);
  });

  it('exit 1 with one line: nothing to report, no gateway there, a file that is not a shadow report', async () => {
    const empty = await runCli(['shadow-report', '--admin', String(plain.adminPort)]);
    assert.equal(empty.code, 1);
    assert.match(empty.out, /^no shadow traffic or canary answers in http:\/\/127\.0\.0\.1:\d+\/report\/shadow\.csv: .*\n$/);

    const port = await closedPort();
    const gone = await runCli(['shadow-report', '--admin', `127.0.0.1:${port}`]);
    assert.equal(gone.code, 1);
    assert.equal(gone.out, '');
    assert.match(gone.err, new RegExp(`^ged145 shadow-report: cannot reach the gateway's admin port at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
    assert.equal(gone.err.trim().split('\n').length, 1, gone.err);

    const halfHour = path.join(dir, 'half-hour.csv');
    fs.writeFileSync(halfHour, await get(stack.adminPort, '/report/half-hour.csv'));
    const wrong = await runCli(['shadow-report', '--file', halfHour]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.err, /is not a shadow report: its header has no Candidate, Same, .*\(it is the half-hour view/);
    assert.equal(wrong.err.trim().split('\n').length, 1, wrong.err);

    const both = await runCli(['shadow-report', '--admin', '8080', '--file', halfHour]);
    assert.equal(both.code, 2);
    assert.match(both.err, /--admin and --file name two reports/);
  });
});
