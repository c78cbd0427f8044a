'use strict';

// A small GED-145 host written from docs/protocol.md on the project's codec, for the conformance
// kit's tests: correct by default, with fault switches that each break one rule the way real
// hosts do (a reply written twice, no reassembly, replies past 300 ms, heartbeats behind queries,
// a lost reply, a wrong InvokeID, OPEN always accepted...). Its "backend": subtype `slow` answers
// after 1 s (the host answers FAILURE_CONF E_AG_HOST_ERROR1 at its 250 ms deadline), `fail` fails,
// any other answers at once with VAR1.

const net = require('node:net');
const {
  MessageReader, serialize, decode, des, DIRECTION, STATUS, MESSAGE_TYPES: T, IDLE_TIMEOUT_RANGE,
} = require('../../lib/protocol');

const FAULTS = Object.freeze([
  'twice', // every query reply written twice
  'twiceLate', // every query reply written again 400 ms later: past any window shorter than the connection
  'heartbeatConfForQuery', // every query answered HEARTBEAT_CONF with its InvokeID
  'heartbeatsHeld', // every HEARTBEAT_CONF written heldMs (1500 ms) after its request
  'diesOnSplit', // a read that ends inside a frame kills the host: every connection and the listener closed
  'noReassembly', // one read = one message: the first frame of each chunk, the rest dropped
  'late', // query replies held until 350 ms after the query arrived
  'heartbeatsBehind', // a heartbeat waits until every query in flight is answered
  'lostReply', // every 7th query gets no reply
  'wrongInvokeId', // query replies carry InvokeID + 1
  'openAlwaysAccepted', // OPEN_REQ always gets OPEN_CONF: a second one, a bad version, a bad key
  'noIdleTimeout', // OPEN_REQ's IdleTimeout is ignored
  'noSessionCheck', // queries and PARAM_REQs answered before OPEN and after CLOSE
  'closeAtOnce', // CLOSE_REQ answered at once; the queries in flight are dropped
  'unknownTagFatal', // a query with a tag it does not know closes the connection
  'noDeadline', // a slow backend is waited for: no answer at the host's deadline
  'rejectsIgnored', // a frame with a bad body gets no reply
]);

const DEADLINE_MS = 250;
const TWICE_LATE_MS = 400;
const SLOW_MS = 1000;

class HostSession {
  constructor(socket, host) {
    this.socket = socket;
    this.host = host;
    this.f = host.faults;
    this.state = 'connected';
    this.inflight = new Map(); // invokeId -> timers
    this.heldHeartbeats = [];
    this.closeWaiters = [];
    this.queries = 0;
    this.cipher = undefined;
    this.idleTimer = null;
    socket.setNoDelay(true);
    socket.on('error', () => {});
    socket.on('close', () => this.closed());
    this.reader = new MessageReader({
      direction: DIRECTION.ROUTER_TO_HOST,
      onMessage: (m) => this.onMessage(m),
      onError: (err) => this.onError(err),
    });
    socket.on('data', (chunk) => {
      this.touch();
      if (this.f.diesOnSplit && (chunk.length < 8 || chunk.length < 8 + chunk.readUInt32BE(0))) {
        host.die();
        return;
      }
      if (this.f.noReassembly) this.readFirstFrame(chunk);
      else this.reader.push(chunk);
    });
  }

  readFirstFrame(chunk) {
    if (chunk.length < 8) return;
    try {
      this.onMessage(decode(chunk.readUInt32BE(4), chunk.subarray(8, 8 + chunk.readUInt32BE(0)), DIRECTION.ROUTER_TO_HOST, this.cipher));
    } catch (err) {
      if (err.code) this.onError(err);
    }
  }

  send(buf) {
    if (!this.socket.destroyed) this.socket.write(buf);
  }

  touch() {
    if (this.idleMs === undefined || this.f.noIdleTimeout) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.socket.end(), this.idleMs);
  }

  onMessage(m) {
    switch (m.typeId) {
      case T.OPEN_REQ: return this.onOpen(m);
      case T.HEARTBEAT_REQ: return this.onHeartbeat(m);
      case T.CLOSE_REQ: return this.onClose(m);
      case T.PARAM_REQ: return this.inSession(m) && this.send(serialize.paramConf(m.invokeId));
      case T.QUERY_REQ: return this.inSession(m) && this.onQuery(m);
      default: return undefined;
    }
  }

  inSession(m) {
    if (this.state === 'open' || this.f.noSessionCheck) return true;
    this.send(serialize.failureConf(m.invokeId, STATUS.E_AG_SESSION_INACTIVE, 'no open session'));
    return false;
  }

  onOpen(m) {
    const refuse = (status, text) => this.send(serialize.failureConf(m.invokeId, status, text));
    let key = null;
    if (!this.f.openAlwaysAccepted) {
      if (this.state === 'open') return refuse(STATUS.E_AG_SESSION_ACTIVE, 'session is already open');
      if (m.version !== 2) return refuse(STATUS.E_AG_INVALID_VERSION, `version ${m.version}`);
      if (m.encryption === 1) {
        key = this.host.desKey ? des.openSessionKey(this.host.desKey, m.sessionKey) : null;
        if (key === null) return refuse(STATUS.E_AG_INVALID_KEY, 'session key does not match');
      }
    } else if (m.encryption === 1 && this.host.desKey) {
      key = des.openSessionKey(this.host.desKey, m.sessionKey);
    }
    this.state = 'open';
    this.cipher = key ? des.createSessionCipher(key) : undefined;
    this.reader.setCipher(this.cipher);
    const idle = m.idleTimeoutMs;
    this.idleMs = idle >= IDLE_TIMEOUT_RANGE.min && idle <= IDLE_TIMEOUT_RANGE.max ? idle : 60_000;
    this.touch();
    return this.send(serialize.openConf(m.invokeId));
  }

  onHeartbeat(m) {
    if (this.f.heartbeatsHeld) setTimeout(() => this.send(serialize.heartbeatConf(m.invokeId)), this.host.heldMs);
    else if (this.f.heartbeatsBehind && this.inflight.size > 0) this.heldHeartbeats.push(m.invokeId);
    else this.send(serialize.heartbeatConf(m.invokeId));
  }

  onClose(m) {
    if (this.state === 'open') this.state = 'closing';
    if (this.f.closeAtOnce) {
      for (const timers of this.inflight.values()) timers.forEach(clearTimeout);
      this.inflight.clear();
    }
    this.closeWaiters.push(m.invokeId);
    this.settled();
  }

  onQuery(q) {
    this.queries++;
    if (this.f.unknownTagFatal && q.unknownTags) {
      this.socket.destroy();
      return;
    }
    if (this.f.lostReply && this.queries % 7 === 0) return;
    const arrived = Date.now();
    const answer = (buf) => {
      const timers = this.inflight.get(q.invokeId);
      if (timers === undefined || timers.answered) return;
      timers.answered = true;
      timers.forEach(clearTimeout);
      const write = () => {
        if (!this.inflight.delete(q.invokeId)) return; // dropped meanwhile (closeAtOnce, the socket closed)
        this.send(this.f.heartbeatConfForQuery ? serialize.heartbeatConf(q.invokeId) : buf);
        if (this.f.twice) this.send(buf);
        if (this.f.twiceLate) setTimeout(() => this.send(buf), TWICE_LATE_MS);
        this.settled();
      };
      const wait = this.f.late ? Math.max(0, 350 - (Date.now() - arrived)) : 0;
      if (wait > 0) timers.push(setTimeout(write, wait));
      else write();
    };
    const id = this.f.wrongInvokeId ? (q.invokeId + 1) >>> 0 : q.invokeId;
    const failure = (text) => serialize.failureConf(id, STATUS.E_AG_HOST_ERROR1, text, { cipher: this.cipher });
    const timers = [];
    this.inflight.set(q.invokeId, timers);
    if (q.subtype === 'slow') {
      timers.push(setTimeout(() => answer(serialize.queryResp({ invokeId: id, status: 0, vars: { 1: 'slow' } }, { cipher: this.cipher })), SLOW_MS));
      if (!this.f.noDeadline) timers.push(setTimeout(() => answer(failure('backend did not answer in time')), DEADLINE_MS));
    } else if (q.subtype === 'fail') {
      timers.push(setTimeout(() => answer(failure('backend failed')), 2));
    } else {
      const resp = q.noScriptReply ? { invokeId: id, status: 0 } : { invokeId: id, status: 0, vars: { 1: 'ok' } };
      setImmediate(() => answer(serialize.queryResp(resp, { cipher: this.cipher })));
    }
  }

  /** Once nothing is in flight: held heartbeats, then CLOSE_CONFs. */
  settled() {
    if (this.inflight.size > 0) return;
    for (const id of this.heldHeartbeats.splice(0)) this.send(serialize.heartbeatConf(id));
    for (const id of this.closeWaiters.splice(0)) this.send(serialize.closeConf(id));
    if (this.ending) {
      this.send(serialize.failureEvent(STATUS.E_AG_INVALID_MESSAGE, this.ending));
      this.socket.end();
    }
  }

  onError(err) {
    if (err.fatal) { // what was read before it is answered first, then FAILURE_EVENT and our FIN
      this.ending = err.message;
      this.settled();
      return;
    }
    if (this.f.rejectsIgnored) return;
    if (err.invokeId === undefined) this.send(serialize.failureEvent(err.status, err.message));
    else this.send(serialize.failureConf(err.invokeId, err.status, err.message));
  }

  closed() {
    clearTimeout(this.idleTimer);
    for (const timers of this.inflight.values()) timers.forEach(clearTimeout);
    this.inflight.clear();
  }
}

/** Starts the host on 127.0.0.1, a free port. faults: names from FAULTS; desKey: Buffer or null; heldMs: how long heartbeatsHeld holds. */
async function startConformanceHost({ faults = [], desKey = null, heldMs = 1500 } = {}) {
  for (const f of faults) if (!FAULTS.includes(f)) throw new RangeError(`unknown fault ${f}`);
  const sockets = new Set();
  const host = {
    faults: Object.fromEntries(faults.map((f) => [f, true])),
    desKey,
    heldMs,
    die() { // as a crashed process does: the listener and every connection gone at once
      if (server.listening) server.close();
      for (const s of sockets) s.destroy();
    },
  };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    new HostSession(socket, host);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    close() {
      for (const s of sockets) s.destroy();
      return server.listening ? new Promise((r) => server.close(r)) : Promise.resolve();
    },
  };
}

module.exports = { startConformanceHost, FAULTS };
