'use strict';

// The decision log: real processes (rest-sim, a gateway with --workers 2, `ged145 why`) and real
// router connections; a call asked on two sessions (the router's two sides) is written from both
// or neither, and `ged145 why` finds each sampled call by RouterCallDay and RouterCallKey across
// the workers' files. In one process: log.redact hides values and keeps names, /status and the
// metrics show what was written, and records past the bounded queue are dropped and counted.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { WireClient } = require('../../helpers/wire');
const { spawnCli } = require('../../helpers/spawn');
const { tmpDir } = require('../../helpers/tmp');
const { startStack } = require('../../helpers/stack');
const { DecisionLog, MAX_QUEUED } = require('../../../gateway/ops/decisions');
const { callShare } = require('../../../gateway/call-share');
const { channels } = require('../../../gateway/session/diagnostics');
const { findCall } = require('../../../tools/why/find');

const DAY = 20_123;

/** The settle of a query of call DAY/key that was never answered (its router went away), as a session publishes it. */
function publishLost(gateway, session, key) {
  channels.querySettle.publish({
    gateway,
    session,
    query: {
      subtype: 'echo', side: 'A', labels: {}, fields: { invokeId: key, routerCallDay: DAY, routerCallKey: key },
    },
    outcome: 'lost_router_gone',
    status: null,
    ms: 1,
    late: false,
    reply: null,
  });
}
const CALLS = 40;
const SUBTYPES = ['echo', 'fail', 'reject']; // QUERY_RESP, FAILURE_CONF E_AG_HOST_ERROR1, E_AG_HOST_ERROR2
const EXPECTED = {
  echo: { outcome: 'ok', reply: 'QUERY_RESP', status: 0, source: 'backend' },
  fail: { outcome: 'host_error', reply: 'FAILURE_CONF', status: 'E_AG_HOST_ERROR1', source: null },
  reject: { outcome: 'app_error', reply: 'FAILURE_CONF', status: 'E_AG_HOST_ERROR2', source: 'backend' },
};
const DEADLINE = { outcome: 'deadline', reply: 'FAILURE_CONF', status: 'E_AG_HOST_ERROR1', source: null };
const subtypeOf = (key) => SUBTYPES[key % SUBTYPES.length];

/** Each call asked once on each session, as router sides A and B both would; resolves when all are answered. */
async function askBoth(sessions) {
  for (const c of sessions) {
    for (let key = 1; key <= CALLS; key++) c.query(key, { routerCallDay: DAY, routerCallKey: key, subtype: subtypeOf(key), vars: { 1: `v${key}` } });
  }
  await Promise.all(sessions.map((c) => c.waitForCount(CALLS + 1, 30_000))); // OPEN_CONF and the replies
}

/** `ged145 why` as a child process: {code, out}. */
async function why(args) {
  const child = spawnCli(['why', ...args]);
  const { code } = await child.exited;
  return { code, out: child.out, err: child.err };
}

describe('decision log', function () {
  this.timeout(120_000);

  describe('with --workers 2, sample 0.5, every call asked from both sides', () => {
    let sim;
    let gw;
    const dir = tmpDir();
    const file = path.join(dir, 'decisions.jsonl');
    let simOrigin;

    before(async () => {
      sim = spawnCli(['rest-sim', '--port', '0', '--ready-json']);
      const { url } = await sim.ready();
      simOrigin = new URL(url).origin;
      const config = path.join(dir, 'gateway.json');
      fs.writeFileSync(config, JSON.stringify({ backend: { url }, decisions: { file, sample: 0.5 } }));
      gw = spawnCli(['gateway', '--config', config, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--workers', '2', '--ready-json']);
      const { port } = await gw.ready();
      await gw.waitFor(/2 workers listening for ICM routers/);
      const sessions = [];
      for (const side of ['A', 'B']) {
        const c = await WireClient.connect(Number(port));
        await c.open({ config: side });
        sessions.push(c);
      }
      await askBoth(sessions);
      for (const c of sessions) c.close();
      gw.kill('SIGTERM'); // the workers write what they queued before they exit
      assert.equal((await gw.exited).code, 0, gw.err);
    });

    after(async () => {
      for (const p of [gw, sim]) if (p && p.exitCode === null) p.kill('SIGTERM');
      await Promise.all([gw, sim].filter(Boolean).map((p) => p.exited));
    });

    it('each worker writes a file of its own', () => {
      const names = fs.readdirSync(dir).filter((n) => n.startsWith('decisions'));
      assert.ok(names.length >= 1 && names.every((n) => /^decisions\.w\d+\.jsonl$/.test(n)), names.join(', '));
    });

    it('a call is written from both sessions or from neither, by its share of RouterCallDay and RouterCallKey', async () => {
      let sampled = 0;
      for (let key = 1; key <= CALLS; key++) {
        const { records } = await findCall(file, DAY, key);
        const expected = callShare(DAY, key) < 0.5 ? 2 : 0;
        assert.equal(records.length, expected, `call ${DAY}/${key}: ${records.length} record(s)`);
        if (expected === 2) sampled++;
        for (const r of records) {
          // A busy machine can make the gateway's own deadline answer of any query: recorded as such.
          const want = r.outcome === 'deadline' ? DEADLINE : EXPECTED[subtypeOf(key)];
          assert.equal(r.subtype, subtypeOf(key));
          assert.equal(r.outcome, want.outcome);
          assert.equal(r.source, want.source);
          assert.equal(r.reply.type, want.reply);
          assert.equal(r.reply.status, want.status);
          assert.equal(r.route, 'POST /query/{subtype}'); // the route's template: the path sent may hold caller data
          assert.equal(r.origin, simOrigin);
          assert.equal(r.attempts, 1);
          assert.equal(typeof r.worker, 'number');
          assert.equal(r.query.vars['1'], `v${key}`);
          if (want.reply === 'QUERY_RESP') assert.equal(r.reply.fields.vars['1'], `v${key}`, 'the echo answer, as the router got it');
        }
        assert.deepEqual(records.map((r) => r.side).sort(), expected === 2 ? ['A', 'B'] : []);
      }
      assert.ok(sampled > 0 && sampled < CALLS, `${sampled} of ${CALLS} calls sampled at 0.5`);
    });

    it('`ged145 why DAY KEY` finds every sampled call; a call not written is one line and exit 1', async () => {
      const keys = Array.from({ length: CALLS }, (_, i) => i + 1);
      for (let i = 0; i < keys.length; i += 8) {
        const batch = keys.slice(i, i + 8);
        const results = await Promise.all(batch.map((key) => why([String(DAY), String(key), '--file', file, '--json'])));
        results.forEach(({ code, out, err }, j) => {
          const key = batch[j];
          if (callShare(DAY, key) < 0.5) {
            assert.equal(code, 0, `call ${DAY}/${key}: ${err}`);
            const records = out.trim().split('\n').map((l) => JSON.parse(l));
            assert.equal(records.length, 2);
            for (const r of records) assert.deepEqual([r.routerCallDay, r.routerCallKey], [DAY, key]);
          } else {
            assert.equal(code, 1, `call ${DAY}/${key}: ${out}${err}`);
            assert.match(out, new RegExp(`^no record of call ${DAY}/${key} in \\d+ file\\(s\\)[^\\n]*\\n$`));
          }
        });
      }
    });

    it('for a person: what was asked, where it went, what came back, what the router got', async () => {
      const key = Array.from({ length: CALLS }, (_, i) => i + 1).find((k) => subtypeOf(k) === 'echo' && callShare(DAY, k) < 0.5);
      const { code, out } = await why([String(DAY), String(key), '--file', file]);
      assert.equal(code, 0);
      assert.match(out, new RegExp(`^call ${DAY}/${key} at \\S+, side [AB], session \\d+ \\(127\\.0\\.0\\.1:\\d+\\), InvokeID ${key}, worker \\d+$`, 'm'));
      assert.match(out, new RegExp(`^ {2}asked: +subtype echo, vars\\.1=v${key}$`, 'm'));
      assert.match(out, new RegExp(`^ {2}went: +POST /query/\\{subtype\\} at ${simOrigin}; the backend's answer: ok$`, 'm'));
      assert.match(out, /^ {2}came back: +ok from the backend in [\d.]+ ms$/m);
      assert.match(out, new RegExp(`^ {2}router got: +QUERY_RESP status 0: vars\\.1=v${key}$`, 'm'));
      const failing = Array.from({ length: CALLS }, (_, i) => i + 1).find((k) => subtypeOf(k) === 'fail' && callShare(DAY, k) < 0.5);
      const failed = await why([String(DAY), String(failing), '--file', file]);
      assert.match(failed.out, /^ {2}router got: +FAILURE_CONF E_AG_HOST_ERROR1 "[^"]+"$/m);
      assert.match(failed.out, /^ {2}went: +POST \/query\/\{subtype\} at \S+; the backend's answer: http_500$/m);
    });
  });

  describe('in one process', () => {
    let stack;
    afterEach(async () => {
      if (stack) await stack.stop();
      stack = null;
    });

    it('log.redact: values hidden, names kept; /status and the metrics count what was written', async () => {
      const file = path.join(tmpDir(), 'decisions.jsonl');
      stack = await startStack({ gateway: { 'decisions.file': file, 'log.redact': true } });
      const c = await WireClient.connect(stack.port);
      await c.open();
      c.query(7, {
        routerCallDay: DAY, routerCallKey: 7, subtype: 'echo', clid: '5551234567', vars: { 2: 'secret' },
      });
      await c.waitForCount(2);
      c.close();
      let status;
      for (let i = 0; i < 100; i++) {
        status = await (await fetch(`http://127.0.0.1:${stack.adminPort}/status`)).json();
        if (status.processes[0].decisions.written === 1) break;
        await new Promise((r) => { setTimeout(r, 50); });
      }
      assert.deepEqual(status.processes[0].decisions, {
        file, sample: 1, written: 1, dropped: 0, queued: 0,
      });
      const metrics = await (await fetch(`http://127.0.0.1:${stack.adminPort}/metrics`)).text();
      assert.match(metrics, /^ged145_decisions_written_total 1$/m);
      assert.match(metrics, /^ged145_decisions_dropped_total 0$/m);
      await stack.stop();
      stack = null;
      const [line, ...rest] = fs.readFileSync(file, 'utf8').trim().split('\n');
      assert.equal(rest.length, 0);
      const r = JSON.parse(line);
      assert.deepEqual(r.query, { clid: '[redacted]', vars: { 2: '[redacted]' } });
      assert.deepEqual(r.reply, { type: 'QUERY_RESP', status: 0, fields: { vars: { 2: '[redacted]' } } });
      assert.doesNotMatch(line, /5551234567|secret/);
    });

    it('off: no file, and /status says null', async () => {
      stack = await startStack();
      const c = await WireClient.connect(stack.port);
      await c.open();
      c.query(1, { subtype: 'echo' });
      await c.waitForCount(2);
      c.close();
      const status = await (await fetch(`http://127.0.0.1:${stack.adminPort}/status`)).json();
      assert.equal(status.processes[0].decisions, null);
    });

    it('rotated files are gzipped, and `ged145 why` reads them', async () => {
      stack = await startStack();
      const dir = tmpDir();
      const file = path.join(dir, 'decisions.jsonl');
      const { Registry } = require('prom-client');
      const d = new DecisionLog({ file, sample: 1 }, {
        gateway: stack.gateway, log: { warn: () => {} }, registry: new Registry(), worker: null, maxSize: 64 * 1024,
      });
      const session = { id: 1, peer: '127.0.0.1:1', encrypted: false, profile: undefined };
      const n = 2000; // ten times what a 64 KB file holds: rotated again and again, the four newest older files kept
      for (let i = 1; i <= n; i++) {
        publishLost(stack.gateway, session, i);
        if (i % 100 === 0) await new Promise((r) => { setImmediate(r); });
      }
      await d.close();
      const names = fs.readdirSync(dir).sort();
      assert.deepEqual(names, ['decisions.jsonl', 'decisions1.jsonl.gz', 'decisions2.jsonl.gz', 'decisions3.jsonl.gz', 'decisions4.jsonl.gz']);
      const inRotated = zlib.gunzipSync(fs.readFileSync(path.join(dir, 'decisions2.jsonl.gz'))).toString().trim().split('\n').map((l) => JSON.parse(l));
      const key = inRotated[0].routerCallKey;
      const { code, out } = await why([String(DAY), String(key), '--file', file, '--json']);
      assert.equal(code, 0);
      assert.equal(JSON.parse(out).routerCallKey, key);
      assert.equal((await why([String(DAY), String(n), '--file', file, '--json'])).code, 0, 'the newest, in the live file');
    });

    it('past the bounded queue a record is dropped and counted; the query path never waits for the file', async () => {
      stack = await startStack();
      const file = path.join(tmpDir(), 'decisions.jsonl');
      const { Registry } = require('prom-client');
      const registry = new Registry();
      const log = { warn: (line) => log.lines.push(line), lines: [] };
      const d = new DecisionLog({ file, sample: 1 }, {
        gateway: stack.gateway, log, registry, worker: null,
      });
      // Settles published in one turn of the event loop, as a burst would: the file gets none of
      // them before the turn ends, so everything past MAX_QUEUED is dropped.
      const burst = MAX_QUEUED + 500;
      const session = { id: 1, peer: '127.0.0.1:1', encrypted: false, profile: undefined };
      for (let i = 0; i < burst; i++) {
        publishLost(stack.gateway, session, i);
      }
      assert.equal(d.toJSON().dropped, 500);
      assert.equal(d.toJSON().queued, MAX_QUEUED);
      await d.close();
      assert.equal(d.toJSON().written, MAX_QUEUED);
      assert.equal(fs.readFileSync(file, 'utf8').trim().split('\n').length, MAX_QUEUED);
      assert.match((await registry.metrics()), /^ged145_decisions_dropped_total 500$/m);
      assert.equal(log.lines.length, 1);
      assert.match(log.lines[0], /^decisions: 1 record\(s\) dropped: .*queries are not affected/); // the first at once, the rest within the minute
    });
  });
});
