'use strict';

// Does the circuit breaker answer the router at least as often as no breaker? Each scenario runs
// twice in the same process, on two fresh gateways against the same programmable backend: the
// default configuration (breaker on) and `"breaker": false`. Queries are sent at a fixed rate
// over one router session; "answered" is QUERY_RESP (an answer from the backend). Prints each
// scenario's answered counts, on/off, and the median of BENCH_ROUNDS rounds (2 by default).
//   split      half the traffic to a subtype the backend answers 500, one origin: the healthy half
//   slow       answers uniform in 200-300 ms, deadline 250 ms (slow but alive)
//   flapping   1 s answering, 1 s HTTP 500, over and over
//   route-off  as split, the failing subtype's route with "breaker": false: the healthy half
//   failover   backend.url [a host that accepts and never answers, a healthy one]: the breaker's job
// What it should show: on >= 0.8 x off for slow and flapping, the healthy subtype >= 95 %.

const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { startGatewayProcess } = require('./harness');
const { WireClient } = require('../tests/helpers/wire');
const { table, writeResult } = require('./report');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 2);
const ANSWER = '{"vars":{"1":"x"}}';

/** A backend whose answer to each request is decided by `behave(subtype, msSinceStart)`: 'ok', 500, or a delay in ms. */
async function backend() {
  const b = { behave: () => 'ok', start: performance.now() };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const what = b.behave(req.url.split('/').pop(), performance.now() - b.start);
      if (what === 500) {
        res.statusCode = 500;
        res.end('down');
      } else if (typeof what === 'number') setTimeout(() => res.end(ANSWER), what);
      else res.end(ANSWER);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  b.url = `http://127.0.0.1:${server.address().port}`;
  b.close = () => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  };
  return b;
}

/** A TCP server that accepts connections and never answers (a hung application). */
async function blackHole() {
  const sockets = new Set();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

/** rate queries a second for ms, subtype(i) for the i-th; resolves {sent, answered: {subtype: n}}. */
async function paced(client, { rate, ms, subtype }) {
  const total = Math.round((rate * ms) / 1000);
  const subtypes = new Map();
  const start = performance.now();
  let i = 0;
  await new Promise((resolve) => {
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000));
      for (; i < due; i++) {
        const s = subtype(i);
        subtypes.set(10_000 + i, s);
        client.query(10_000 + i, { subtype: s, clid: String(5_550_000_000 + i) });
      }
      if (i >= total) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  await client.waitFor(() => client.messages.filter((m) => subtypes.has(m.invokeId)).length >= total, 10_000);
  const answered = {};
  const sent = {};
  for (const s of subtypes.values()) sent[s] = (sent[s] || 0) + 1;
  for (const m of client.messages) {
    if (m.type === 'QUERY_RESP' && subtypes.has(m.invokeId)) answered[subtypes.get(m.invokeId)] = (answered[subtypes.get(m.invokeId)] || 0) + 1;
  }
  return { sent, answered };
}

const SCENARIOS = [
  {
    name: 'split', rate: 200, ms: 5000, count: 'good', subtype: (i) => (i % 2 ? 'bad' : 'good'), behave: (s) => (s === 'bad' ? 500 : 'ok'),
  },
  {
    name: 'slow', rate: 150, ms: 6000, count: 's', subtype: () => 's', behave: () => 200 + Math.random() * 100,
  },
  {
    name: 'flapping', rate: 200, ms: 6000, count: 's', subtype: () => 's', behave: (s, t) => (Math.floor(t / 1000) % 2 ? 500 : 'ok'),
  },
  {
    name: 'route-off',
    rate: 200,
    ms: 5000,
    count: 'good',
    subtype: (i) => (i % 2 ? 'bad' : 'good'),
    behave: (s) => (s === 'bad' ? 500 : 'ok'),
    config: { routes: { bad: { breaker: false } } },
  },
  {
    name: 'failover', rate: 200, ms: 5000, count: 's', subtype: () => 's', behave: () => 'ok', hungFirst: true,
  },
];

async function runScenario(sc, breaker, dir) {
  const b = await backend();
  const hole = sc.hungFirst ? await blackHole() : null;
  const config = { ...(sc.config || {}), backend: { url: hole === null ? b.url : [hole.url, b.url] } };
  if (!breaker) config.breaker = false;
  const file = path.join(dir, `${sc.name}-${breaker ? 'on' : 'off'}.json`);
  fs.writeFileSync(file, JSON.stringify(config));
  const gw = await startGatewayProcess({ args: ['--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--config', file, '--log-level', 'error'] });
  const client = await WireClient.connect(gw.port);
  try {
    await client.open();
    b.behave = sc.behave;
    b.start = performance.now();
    const r = await paced(client, sc);
    return { sent: r.sent[sc.count], answered: r.answered[sc.count] || 0 };
  } finally {
    client.close();
    await gw.stop();
    await b.close();
    if (hole !== null) await hole.close();
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ged145-bench-'));
  const rows = [];
  try {
    for (const sc of SCENARIOS) {
      const on = [];
      const off = [];
      for (let round = 0; round < ROUNDS; round++) {
        on.push(await runScenario(sc, true, dir));
        off.push(await runScenario(sc, false, dir));
      }
      const row = {
        scenario: sc.name,
        counted: on[0].sent,
        on: on.map((r) => r.answered),
        off: off.map((r) => r.answered),
      };
      row.ratio = median(row.off) === 0 ? null : median(row.on) / median(row.off);
      rows.push(row);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(table(['scenario', 'queries counted', 'answered, breaker on', 'answered, breaker off', 'on / off (medians)'],
    rows.map((r) => [r.scenario, r.counted, r.on.join(' '), r.off.join(' '), r.ratio === null ? '-' : r.ratio.toFixed(2)])));
  writeResult('breaker', { rounds: ROUNDS, rows });
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
