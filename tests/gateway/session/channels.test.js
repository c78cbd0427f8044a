'use strict';

// The session and query channels of docs/diagnostics.md, over a real gateway on 127.0.0.1: each
// one fires, with the fields the document promises, for this gateway only; and the labels a
// subscriber gives a query reach that query's log lines.

const assert = require('node:assert/strict');
const dc = require('node:diagnostics_channel');
const { STATUS, serialize } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, captureLogger } = require('../../helpers/stack');

const NAMES = [
  'ged145:session:open', 'ged145:session:state', 'ged145:session:close', 'ged145:session:heartbeat',
  'ged145:session:protocol-error', 'ged145:query:start', 'ged145:query:settle', 'ged145:connection:refused',
];

/** Subscribes to every channel; keeps [name, message] in order. */
function listen() {
  const seen = [];
  const subs = NAMES.map((name) => {
    const f = (msg) => seen.push([name, msg]);
    dc.subscribe(name, f);
    return [name, f];
  });
  return { seen, off: () => subs.forEach(([name, f]) => dc.unsubscribe(name, f)) };
}

/** A frame of a message type no GED-145 peer sends: rejected (FAILURE_EVENT), the connection lives on. */
function unknownTypeFrame() {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(4, 0);
  b.writeUInt32BE(99, 4);
  b.writeUInt32BE(7, 8);
  return b;
}

describe('diagnostics channels of sessions and queries (docs/diagnostics.md)', () => {
  it('each fires over a real connection with its documented fields, and query labels reach the query\'s log lines', async () => {
    const log = captureLogger('debug');
    const stack = await startStack({ logger: log, gateway: { 'limits.maxSessions': 1, 'log.level': 'debug' } });
    const other = await startStack(); // a second gateway in this process: its messages name it, not ours
    const { seen, off } = listen();
    const labelOnStart = ({ gateway, query }) => { if (gateway === stack.gateway) query.labels.trace_id = `t${query.invokeId}`; };
    dc.subscribe('ged145:query:start', labelOnStart);
    const requests = [];
    const onRequest = (m) => { if (m.gateway === stack.gateway) requests.push(m); };
    dc.subscribe('ged145:backend:request:start', onRequest);
    const clients = [];
    try {
      const a = await WireClient.connect(stack.port);
      clients.push(a);
      assert.equal((await a.open({ config: 'side-A' })).type, 'OPEN_CONF');
      a.query(2, { subtype: 'echo', vars: { 1: 'ok' } });
      a.query(3, { subtype: 'no-such-route' });
      a.send(serialize.heartbeatReq(4));
      a.send(unknownTypeFrame());
      await a.waitForCount(5);
      // A second session past limits.maxSessions: refused at OPEN_REQ.
      const b = await WireClient.connect(stack.port);
      clients.push(b);
      assert.equal((await b.open({ config: 'side-B' })).status, STATUS.E_AG_HOST_OFFLINE);
      a.send(serialize.closeReq(5));
      await a.waitFor((m) => m.invokeId === 5 && m.type === 'CLOSE_CONF');
      a.close();
      await a.waitClosed();
      const c = await WireClient.connect(other.port);
      clients.push(c);
      await c.open();
      await new Promise((r) => setTimeout(r, 100));

      const ours = seen.filter(([, m]) => m.gateway === stack.gateway);
      const of = (name) => ours.filter(([n]) => n === name).map(([, m]) => m);
      assert.ok(seen.some(([, m]) => m.gateway === other.gateway), 'the other gateway publishes too, under its own name');
      assert.deepEqual(NAMES.filter((n) => of(n).length === 0), [], 'every channel fired');

      const sessionA = of('ged145:query:start')[0].session;
      assert.ok(of('ged145:session:open').some((m) => m.session === sessionA));
      for (const m of of('ged145:session:open')) {
        assert.deepEqual([typeof m.session.id, typeof m.session.peer, m.session.tls], ['number', 'string', false]);
      }
      assert.equal(sessionA.side, 'side-A');
      // One setter for the state and the close's step: every change of either is published.
      const transitions = of('ged145:session:state').filter((m) => m.session === sessionA).map((m) => `${m.from} ${m.fromStep} -> ${m.to} ${m.step}`);
      assert.deepEqual(transitions, ['connected live -> open live', 'open live -> closing live', 'closing live -> closing ending',
        'closing ending -> closing finishing', 'closing finishing -> closed finishing']);
      const closes = of('ged145:session:close');
      assert.ok(closes.some((m) => m.session === sessionA && typeof m.reason === 'string'), JSON.stringify(closes.map((m) => m.reason)));
      assert.equal(of('ged145:session:heartbeat')[0].session, sessionA);
      const perr = of('ged145:session:protocol-error')[0];
      assert.deepEqual([perr.session, typeof perr.code, perr.fatal], [sessionA, 'string', false]);
      const refused = of('ged145:connection:refused');
      assert.deepEqual(refused.map((m) => m.reason), ['max_sessions']);
      assert.match(refused[0].peer, /^127\.0\.0\.1:\d+$/);

      const starts = of('ged145:query:start');
      assert.deepEqual(starts.map((m) => [m.query.invokeId, m.query.subtype, m.query.side]), [[2, 'echo', 'side-A'], [3, 'no-such-route', 'side-A']]);
      for (const { query } of starts) {
        assert.equal(typeof query.receivedAt, 'number');
        assert.equal(query.fields.subtype, query.subtype);
      }
      assert.deepEqual(starts[0].query.fields.vars, { 1: 'ok' }, 'fields: the caller data as decoded');
      // The backend's channels give the decoded message, the start's query.fields; the session adds nothing to it.
      assert.equal(requests.filter((m) => m.query !== null)[0].query, starts[0].query.fields);
      assert.deepEqual(Object.keys(starts[0].query.fields).filter((k) => /view|label/i.test(k)), [], 'the codec\'s message keeps its own fields');
      const settles = of('ged145:query:settle');
      assert.deepEqual(settles.map((m) => [m.query, m.outcome, m.status, m.late]), [
        [starts[0].query, 'ok', null, false],
        [starts[1].query, 'app_error', 'E_AG_HOST_ERROR2', false],
      ]);
      for (const m of settles) assert.ok(m.ms >= 0 && m.ms < 10_000, `ms ${m.ms}`);

      const queryLine = log.lines.find((l) => l.message === 'query' && l.invokeId === 2);
      assert.ok(queryLine, 'the query\'s debug line');
      assert.equal(queryLine.trace_id, 't2', 'a label given at query:start is on the query\'s log line');
    } finally {
      off();
      dc.unsubscribe('ged145:query:start', labelOnStart);
      dc.unsubscribe('ged145:backend:request:start', onRequest);
      for (const c of clients) c.close();
      await stack.stop();
      await other.stop();
    }
  });
});
