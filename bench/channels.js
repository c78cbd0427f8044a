'use strict';

// What the session's diagnostics channels cost a query (docs/diagnostics.md): the two publishes
// every query makes (ged145:query:start, ged145:query:settle), through the session's own
// publishers (session/diagnostics.js, called as session-queries.js calls them): with nobody
// subscribed (a `hasSubscribers` read each), with the default subscriber only (the metrics
// subscribe to :settle, attach.js), and with both subscribed (traces: a QueryView and two
// messages built; the bench's stand-in for the query's PendingQuery is one more small object).
// Nanoseconds per query, median of BENCH_ROUNDS rounds of BENCH_QUERIES queries, against the
// same loop without any channel. Printed as a table; nothing is written.
//   node bench/channels.js
//   BENCH_ROUNDS=15 BENCH_QUERIES=2000000 node bench/channels.js

const dc = require('node:diagnostics_channel');
const { channels, publishQueryStart, publishQuerySettle } = require('../gateway/session/diagnostics');
const { table } = require('./report');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 11);
const QUERIES = Number(process.env.BENCH_QUERIES || 1_000_000);

const gateway = {};
const session = { id: 1, side: 'side-A', gateway };
const newQuery = (i) => ({
  invokeId: i, subtype: 'cust', clid: '5551000001', view: undefined,
});

/** One query's publishes, as SessionQueries makes them (dispatch, then finish). */
function oneQuery(q, start) {
  if (channels.queryStart.hasSubscribers) publishQueryStart(session, q, start);
  if (channels.querySettle.hasSubscribers) publishQuerySettle(session, q, { start, expired: false, deadlineAt: start + 250 }, 'ok');
}

/** The same loop without channels: what the query costs the bench itself (its object, the clock). */
function bare(q, start) {
  return q.invokeId + start;
}

function run(f) {
  let sink = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < QUERIES; i++) {
    const q = newQuery(i);
    sink += f(q, i) || 0;
  }
  const ns = Number(process.hrtime.bigint() - t0) / QUERIES;
  if (sink === -1) process.stdout.write(''); // keeps the loop's result alive
  return ns;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median ns per query, with the channels' publishes and without, with `subscribed` [name, f] in place. */
function measure(subscribed) {
  for (const [name, f] of subscribed) dc.subscribe(name, f);
  const times = { bare: [], channels: [] };
  for (let r = 0; r < ROUNDS; r++) {
    times.bare.push(run(bare));
    times.channels.push(run(oneQuery));
  }
  for (const [name, f] of subscribed) dc.unsubscribe(name, f);
  return { bare: median(times.bare), channels: median(times.channels) };
}

function main() {
  let counted = 0;
  const ours = (msg) => { if (msg.gateway === gateway) counted++; }; // what a subscriber of ops/ does first
  const cases = [
    ['nobody subscribed (hasSubscribers false)', []],
    ['query:settle subscribed (the metrics, by default)', [['ged145:query:settle', ours]]],
    ['query:start and :settle subscribed (traces too)', [['ged145:query:start', ours], ['ged145:query:settle', ours]]],
  ];
  measure(cases[2][1]); // every path compiled once before anything is measured
  const rows = cases.map(([label, subscribed]) => {
    const m = measure(subscribed);
    return [label, m.bare.toFixed(1), m.channels.toFixed(1), (m.channels - m.bare).toFixed(1)];
  });
  process.stdout.write(`${QUERIES} queries a round, median of ${ROUNDS} rounds, node ${process.version}\n`);
  process.stdout.write(table(['case', 'ns/query without', 'ns/query with', 'cost ns/query'], rows));
  if (counted === 0) throw new Error('the subscribers never ran');
}

main();
