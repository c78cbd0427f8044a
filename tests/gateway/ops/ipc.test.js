'use strict';

// The cluster's two handler tables (gateway/ops/ipc.js has the messages): what a worker answers
// the primary (QUESTIONS, gateway/ops/cluster-worker.js), asked of a real gateway listening on
// 127.0.0.1, and what the primary does with a worker's message (FROM_WORKER, gateway/ops/cluster.js).

const assert = require('node:assert/strict');
const { loadConfig } = require('../../../gateway/config');
const { openGateway } = require('../../../gateway');
const { Worker, QUESTIONS } = require('../../../gateway/ops/cluster-worker');
const { ClusterPrimary, FROM_WORKER } = require('../../../gateway/ops/cluster');
const {
  ASK, READY, ANSWER, FAILED, FIGURES, Questions,
} = require('../../../gateway/ops/ipc');
const { captureLogger } = require('../../helpers/stack');

const overrides = (more = {}) => ({
  host: '127.0.0.1', port: 0, 'admin.port': 0, 'backend.url': 'http://127.0.0.1:9', warmup: false, ...more,
});
const configOf = (more) => loadConfig({ env: {}, overrides: overrides(more) });

/** A stand-in for a cluster.Worker at the primary: what the primary sends it is kept. */
const fakeWorker = (id, pid) => ({ id, process: { pid }, sent: [], send(msg) { this.sent.push(msg); } });

describe('cluster IPC: the worker\'s table (QUESTIONS)', () => {
  let gateway;
  let worker;
  let sent;
  let exits;

  beforeEach(async () => {
    const log = captureLogger('info');
    const opened = await openGateway(configOf(), { log });
    ({ gateway } = opened);
    sent = [];
    exits = [];
    worker = new Worker(opened, log, 0, {
      send: (m, done) => {
        sent.push(m);
        if (done) done();
      },
      exit: (code) => exits.push(code),
    });
  });
  afterEach(async () => {
    if (!gateway.draining) await gateway.shutdown('test over');
  });

  const ask = async (what, id, payload = {}) => {
    await worker.onMessage({ ...payload, type: ASK, what, id });
    return sent.filter((m) => m.id === id);
  };

  it('answers metrics, health, status and sessions from its gateway, each with the question\'s id', async () => {
    const [metrics] = await ask('metrics', 1);
    assert.equal(metrics.type, ANSWER);
    assert.ok(metrics.data.some((m) => m.name === 'ged145_queries_total'), JSON.stringify(metrics.data.map((m) => m.name)));
    const [health] = await ask('health', 2);
    assert.equal(health.data.pid, process.pid);
    assert.ok(health.data.backend, JSON.stringify(health.data));
    const [status] = await ask('status', 3);
    assert.equal(status.data.listener.port, gateway.port);
    assert.deepEqual((await ask('sessions', 4))[0].data, []);
    assert.deepEqual(sent.map((m) => m.id), [1, 2, 3, 4]);
  });

  it('prepare then commit applies a generation; abort drops it; commit of one not prepared is refused', async () => {
    const settings = JSON.parse(JSON.stringify(configOf({ deadlineMs: 250 })));
    const [prepared] = await ask('prepare', 1, { generation: 1, settings });
    assert.equal(prepared.data.ok, true, JSON.stringify(prepared.data));
    assert.equal(typeof prepared.data.handlers, 'string');
    assert.deepEqual((await ask('commit', 2, { generation: 1 }))[0].data, { ok: true, generation: 1 });
    assert.equal(gateway.config.deadlineMs, 250);
    await ask('prepare', 3, { generation: 2, settings: { ...settings, deadlineMs: 260 } });
    await ask('abort', 0, { generation: 2 }); // id 0: told, not asked
    const [refused] = await ask('commit', 4, { generation: 2 });
    assert.deepEqual(refused.data, { ok: false, error: 'generation 2 was not prepared here' });
    assert.equal(gateway.config.deadlineMs, 250);
    assert.equal(worker.reloads.generation, 1);
    const [caughtUp] = await ask('reload', 5, { generation: 3, settings: { ...settings, deadlineMs: 270 } });
    assert.deepEqual(caughtUp.data, { ok: true, generation: 3 });
    assert.equal(gateway.config.deadlineMs, 270);
  });

  it('a question not in the table, a message that is no question, and id 0 get no answer', async () => {
    await worker.onMessage({ type: ASK, what: 'toString', id: 7 });
    await worker.onMessage({ type: ASK, what: 'nonsense', id: 8 });
    await worker.onMessage({ type: READY, what: 'health', id: 9 });
    await worker.onMessage(null);
    await worker.onMessage({ type: ASK, what: 'health', id: 0 });
    assert.deepEqual(sent, []);
  });

  it('shutdown drains its gateway, hands its last figures to the primary, then the worker exits 0, once', async () => {
    await ask('shutdown', 0);
    await worker.stop('again');
    assert.equal(gateway.draining, true);
    assert.deepEqual(exits, [0]);
    const handed = sent.filter((m) => m.type === FIGURES);
    assert.equal(handed.length, 1);
    assert.ok(handed[0].metrics.some((m) => m.name === 'ged145_queries_total'));
    assert.deepEqual(Object.keys(handed[0].reports).sort(), ['halfHours', 'objectiveCounts', 'objectives', 'shadow']);
  });

  it('has exactly the questions the primary asks', () => {
    assert.deepEqual(Object.keys(QUESTIONS).sort(), [
      'abort', 'commit', 'figures', 'health', 'metrics', 'prepare', 'reload', 'reports', 'sessions', 'shutdown', 'status',
    ]);
  });
});

describe('cluster IPC: the primary\'s table (FROM_WORKER)', () => {
  let primary;
  beforeEach(() => {
    primary = new ClusterPrimary(configOf({ workers: 2 }), { log: captureLogger('info') });
  });

  it('READY: the worker is counted up at its generation, the port taken, the start resolved when all are up', async () => {
    const started = new Promise((resolve, reject) => { primary.starting = { ready: 0, resolve, reject }; });
    primary.onMessage(fakeWorker(1, 101), { type: READY, port: 4001, generation: 0 });
    assert.equal(primary.starting.ready, 1);
    primary.onMessage(fakeWorker(2, 102), { type: READY, port: 4001, generation: 0 });
    await started;
    assert.equal(primary.port, 4001);
    assert.deepEqual(primary.generations.toJSON(), [{ pid: 101, generation: 0 }, { pid: 102, generation: 0 }]);
  });

  it('ANSWER settles the question of that worker with that id, and no other', async () => {
    const w1 = fakeWorker(1, 101);
    const w2 = fakeWorker(2, 102);
    const asked = primary.questions.ask(w1, 'health', {}, 5000);
    const [question] = w1.sent;
    assert.deepEqual([question.type, question.what], [ASK, 'health']);
    primary.onMessage(w2, { type: ANSWER, id: question.id, data: 'from the wrong worker' });
    primary.onMessage(w1, { type: ANSWER, id: question.id + 1, data: 'another id' });
    primary.onMessage(w1, { type: ANSWER, id: question.id, data: { pid: 101 } });
    assert.deepEqual(await asked, { pid: 101 });
    assert.equal(primary.questions.pending.size, 0);
  });

  it('FAILED: the reason is kept for the worker\'s exit; an unknown type is ignored', () => {
    primary.onMessage(fakeWorker(3, 103), { type: FAILED, message: 'port 4001 in use' });
    primary.onMessage(fakeWorker(3, 103), { type: 'constructor' });
    primary.onMessage(fakeWorker(3, 103), null);
    assert.deepEqual([...primary.reasons], [[3, 'port 4001 in use']]);
    assert.deepEqual(Object.keys(FROM_WORKER).sort(), [ANSWER, FAILED, FIGURES, READY].sort());
  });

  it('a question nobody answers resolves undefined after its timeout', async () => {
    const questions = new Questions();
    assert.equal(await questions.ask(fakeWorker(4, 104), 'status', {}, 20), undefined);
    assert.equal(questions.pending.size, 0);
  });
});
