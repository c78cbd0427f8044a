'use strict';

// A case's verdict, once its connections have been watched to the end: what the case itself saw
// (it passed, or a CaseFailure), and what the sweep of every connection found (a second reply, a
// reply of another type, a reply with another InvokeID). One finding leads: the one that explains
// the others (a reply with id + 1 is why the query "got no reply"), with a cause the summary
// groups failures by, and the exchange around the frames it is about.

const { performance } = require('node:perf_hooks');
const { sweep, brief, answers } = require('./replies');
const { rowLine } = require('./exchange');

/** A reply after the router's timeouts is one it has long given up on: the watch waits this long after the last frame. */
const QUIET_MS = 1000;
/** A host that never stops talking does not hold the run: the watch ends this long after the case. */
const WATCH_MAX_MS = 5000;

const EXPLAINS_SILENCE = new Set(['replies with another InvokeID', 'replies with another type']);
/** The order in which findings lead when the case itself saw nothing wrong. */
const PRECEDENCE = ['replies with another InvokeID', 'replies with another type', 'answers twice', 'sends frames that do not decode'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves once every peer has been quiet (nothing from the host) for QUIET_MS since `from`, or all are closed. */
async function watch(peers, from, { quietMs = QUIET_MS, maxMs = WATCH_MAX_MS } = {}) {
  for (;;) {
    const open = peers.filter((p) => !p.closed);
    if (open.length === 0) return;
    const lastIn = Math.max(from, ...peers.map((p) => p.startedAt + p.lastInAt));
    const now = performance.now();
    const left = Math.min(lastIn + quietMs - now, from + maxMs - now);
    if (left <= 0) return;
    await sleep(left);
  }
}

/** The first reply that came for a request the case gave up on, or undefined. */
function lateReply({ peer, invokeId }) {
  const request = peer.requests.get(invokeId);
  return peer.messages.find((m) => m.invokeId === invokeId && (!request || answers(request, m)));
}

/** A failure whose requests got no reply while the case waited, told again with what came later. */
function refine(f) {
  if (!f.pending || f.pending.length === 0) return { cause: f.cause, text: f.observed, marks: f.marks || [] };
  const late = f.pending.map((p) => [p, lateReply(p)]).filter(([, m]) => m !== undefined);
  if (late.length === 0) return { cause: f.cause, text: f.observed, marks: f.marks || [] };
  const [[p0, first]] = late;
  const last = late[late.length - 1][1];
  const marks = late.slice(0, 3).flatMap(([p, m]) => [p.peer.requests.get(p.invokeId), m]);
  const request = p0.peer.requests.get(p0.invokeId);
  const asked = request ? `${Math.round(first.receivedAt - request.at)} ms after the request` : `at ${Math.round(first.receivedAt)} ms`;
  if (f.pending.length === 1) {
    return { cause: 'late reply', text: `a late reply: ${brief(first)} ${asked}; the case waited ${p0.waitedMs} ms`, marks };
  }
  const never = f.pending.length - late.length;
  const tail = `(first: ${brief(first)} ${asked}; the last at ${Math.round(last.receivedAt)} ms)`;
  if (never === 0) {
    const text = `${late.length} of ${f.of || f.pending.length} replies came late, after the ${p0.waitedMs} ms the case waited ${tail}`;
    return { cause: 'late reply', text, marks };
  }
  return { cause: 'no reply', text: `${never} got no reply at all and ${late.length} came late, after the ${p0.waitedMs} ms the case waited ${tail}`, marks };
}

/** Connections the host closed when the case did not wait for it to. */
const hostClosed = (peers) => peers.filter((p) => p.hostEnded && !p.closeExpected && !p.closedByUs);

/**
 * {failed, cause, observed, also, exchange} for a case that ran: failed false when neither the
 * case nor the sweep found anything.
 */
function judge(failure, peers) {
  const findings = peers.flatMap((p) => sweep(p).map((f) => ({ ...f, peer: p })));
  let lead;
  if (failure) {
    const own = refine(failure);
    const explains = findings.find((f) => EXPLAINS_SILENCE.has(f.cause));
    const silent = own.cause === 'no reply' || own.cause === 'replies with another type';
    lead = explains && silent ? explains : own;
    const closed = hostClosed(peers);
    if (lead === own && own.cause === 'no reply' && closed.length > 0) { // it waited, then the host closed
      lead = { ...own, cause: 'closes the connection', text: `${own.text}; the host closed ${closed[0].name} at ${Math.round(closed[0].closedAt)} ms` };
    }
    lead.cause = lead.cause || null;
  } else {
    lead = PRECEDENCE.map((c) => findings.find((f) => f.cause === c)).find(Boolean);
  }
  if (!lead) return { failed: false, findings };
  for (const m of lead.marks || []) if (m && m.row) m.row.marked = true;
  const also = findings.filter((f) => f !== lead).map((f) => f.text);
  return {
    failed: true, cause: lead.cause, observed: lead.text, also, exchange: exchangeOf(peers),
  };
}

/** Each connection's rows around the marked ones; connections with nothing marked only when none has a mark. */
function exchangeOf(peers) {
  const anyMarked = peers.some((p) => p.exchange.rows.some((r) => r.marked));
  return peers.filter((p) => !anyMarked || p.exchange.rows.some((r) => r.marked)).map((p) => ({
    connection: p.name,
    rows: p.exchange.excerpt().map((r) => (r.skipped !== undefined ? r : {
      at: r.at, dir: r.dir === 'out' ? 'router->host' : 'host->router', write: r.write, part: r.part, hex: r.hex, frame: r.text, marked: r.marked,
    })),
  }));
}

/** The exchange as text lines: the console and JUnit. */
function exchangeLines(exchange) {
  const lines = [];
  for (const c of exchange || []) {
    for (const r of c.rows) {
      lines.push(...rowLine(r.skipped !== undefined ? r : {
        ...r, dir: r.dir === 'router->host' ? 'out' : 'in', text: r.frame,
      }, c.connection).split('\n'));
    }
  }
  return lines;
}

module.exports = {
  judge, watch, exchangeLines, QUIET_MS, WATCH_MAX_MS,
};
