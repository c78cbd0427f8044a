'use strict';

// What a case works with: fresh connections to the target (each recorded for the report), the
// router's frames built by the project's serializer, and the checks every case repeats (an OPEN
// that must succeed, a reply that must come once). A case fails by throwing a CaseFailure with
// what it observed; anything else a case throws is the kit's own defect and is reported as such.

const crypto = require('node:crypto');
const { serialize, des, STATUS_NAMES, ROUTER_REQUEST_TIMEOUT_MS } = require('../../lib/protocol');
const { Peer } = require('./peer');
const {
  answers, allowedText, brief, typeName,
} = require('./replies');
const { CaseFailure, CaseSkipped } = require('../../lib/errors');

/** How long a reply may take before a case calls it missing: generous, a case about timing measures itself. */
const REPLY_WAIT_MS = 1000;

/** "QUERY_RESP E_AG_NO_ERROR": a reply's kind, for comparing two replies. */
const kind = (m) => (m ? `${m.type} ${STATUS_NAMES[m.status] || m.status}` : 'nothing');

/**
 * A failure with what a verdict needs besides its text: cause (a few words the summary groups
 * failures by), pending (requests that got no reply while the case waited: a reply that comes
 * later makes it "a late reply") and marks (messages and requests the exchange marks).
 */
function failure(observed, {
  cause, pending = [], marks = [], of,
} = {}) {
  return Object.assign(new CaseFailure(observed), {
    cause, pending, marks, of,
  });
}

/** InvokeIDs the router might use: sparse and out of order, so that a host answering id + 1 (or 1, 2, 3) answers nothing the kit sent. */
function sparseId(used) {
  for (;;) {
    const id = crypto.randomInt(0x100, 0x7fff_ff00) * 2 + 1; // odd: a host that echoes id + 1 or id - 1 hits no id of ours
    if (!used.has(id)) return id;
  }
}

/** Did the host close this connection when the case did not wait for it to? */
const hostClosed = (peer) => peer.closed && peer.hostEnded && !peer.closeExpected;

class CaseContext {
  /**
   * options: {target: {host, port, tls}, subtype, slowSubtype, failingSubtype, desKey (Buffer|null),
   * version, connectTimeoutMs, onHostClose(peer)}.
   */
  constructor(options) {
    this.options = options;
    this.peers = [];
    this.used = new Set();
    this.notes = [];
  }

  /** A fresh connection (the case's own); failing to connect fails the case. */
  async connect(name = `connection ${this.peers.length + 1}`) {
    let peer;
    try {
      peer = await Peer.connect(this.options.target, { connectTimeoutMs: this.options.connectTimeoutMs, name, onHostClose: this.options.onHostClose });
    } catch (err) {
      const code = err.code || err.message;
      const f = failure(`could not connect (${code}): the host stopped accepting connections`, { cause: 'stops accepting connections' });
      throw Object.assign(f, { connectFailed: code });
    }
    this.peers.push(peer);
    return peer;
  }

  /** A fresh InvokeID for this case. */
  id() {
    const id = sparseId(this.used);
    this.used.add(id);
    return id;
  }

  openReq({ invokeId = this.id(), version = this.options.version, idleTimeoutMs = 60_000, encryption = 0, sessionKey, config = 'ged145-conformance' } = {}) {
    return serialize.openReq({
      invokeId, version, idleTimeoutMs, encryption, sessionKey, config,
    }, { nul: true });
  }

  /** OPEN_REQ and its OPEN_CONF, or the case fails: most cases need an open session first. */
  async open(peer, fields = {}) {
    const invokeId = fields.invokeId || this.id();
    peer.send(this.openReq({ ...fields, invokeId }));
    const reply = await this.reply(peer, invokeId, 'OPEN_REQ');
    if (reply.type !== 'OPEN_CONF') throw failure(`OPEN_REQ id=${invokeId} got ${brief(reply)}, not OPEN_CONF`, { cause: 'refuses OPEN_REQ', marks: [reply] });
    return reply;
  }

  /** A connection with an open session. */
  async session(name) {
    const peer = await this.connect(name);
    await this.open(peer);
    return peer;
  }

  /** The fields of an ordinary routed call's query; `fields` override them. */
  queryFields(fields = {}) {
    const invokeId = fields.invokeId === undefined ? this.id() : fields.invokeId;
    return {
      invokeId,
      routerCallDay: 152_000,
      routerCallKey: invokeId,
      subtype: this.options.subtype,
      clid: '5551000001',
      dn: '8005551000',
      routingClient: 'CVP_PG_1A',
      ...fields,
    };
  }

  /** Scalar tags without a trailing NUL by default, as the field-proven host reads them from a live router. */
  queryReq(fields, options = { nul: false }) {
    return serialize.queryReq(this.queryFields(fields), options);
  }

  /** Sends one query and returns its reply (or the case fails: no reply, or a reply of another type). */
  async ask(peer, fields = {}, what = 'the query') {
    const f = this.queryFields(fields);
    peer.send(serialize.queryReq(f, { cipher: fields.cipher }));
    return this.reply(peer, f.invokeId, what);
  }

  /**
   * The first reply to invokeId within ms, of a type the request allows; else the case fails with
   * what came (nothing, or a frame of another type). A second reply is the verdict's to find: it
   * watches the connection to its end.
   */
  async reply(peer, invokeId, what = `request id=${invokeId}`, ms = REPLY_WAIT_MS) {
    const request = peer.requests.get(invokeId);
    const first = await peer.waitFor((m) => m.invokeId === invokeId, ms);
    if (first === null) {
      if (hostClosed(peer)) {
        const text = `${what} (id=${invokeId}) got no reply: the host closed ${peer.name} at ${Math.round(peer.closedAt)} ms`;
        throw failure(text, { cause: 'closes the connection', marks: [request, peer.lastWrite()] });
      }
      throw failure(`${what} (id=${invokeId}) got no reply within ${ms} ms`, {
        cause: 'no reply', pending: [{ peer, invokeId, waitedMs: ms }], marks: [request],
      });
    }
    if (request && !answers(request, first)) {
      throw failure(`a reply of another type: ${brief(first)} at ${Math.round(first.receivedAt)} ms to ${typeName(request.typeId)} id=${invokeId}`
        + ` (it allows ${allowedText(request.typeId)})`, { cause: 'replies with another type', marks: [request, first] });
    }
    return first;
  }

  /** A first reply to every id (in any order) within ms, each of a type its request allows; else the case fails. Map id -> reply. */
  async replies(peer, ids, ms = 3000) {
    await peer.repliesTo(ids, ms);
    const byId = new Map();
    const missing = [];
    const wrong = [];
    for (const id of ids) {
      const first = peer.messages.find((m) => m.invokeId === id);
      const request = peer.requests.get(id);
      if (first === undefined) missing.push(id);
      else if (request && !answers(request, first)) wrong.push([request, first]);
      else byId.set(id, first);
    }
    if (wrong.length > 0) {
      const [request, m] = wrong[0];
      throw failure(`${wrong.length} of ${ids.length} got a reply of another type (first: ${brief(m)} at ${Math.round(m.receivedAt)} ms`
        + ` to ${typeName(request.typeId)} id=${request.invokeId}, which allows ${allowedText(request.typeId)})`,
      { cause: 'replies with another type', marks: [request, m] });
    }
    if (missing.length > 0 && hostClosed(peer)) {
      const closed = `the host closed ${peer.name} at ${Math.round(peer.closedAt)} ms`;
      throw failure(`${missing.length} of ${ids.length} got no reply (first: id=${missing[0]}): ${closed}`,
        { cause: 'closes the connection', marks: [...missing.slice(0, 3).map((id) => peer.requests.get(id)), peer.lastWrite()] });
    }
    if (missing.length > 0) {
      throw failure(`${missing.length} of ${ids.length} got no reply within ${ms} ms (first: id=${missing[0]})`, {
        cause: 'no reply',
        of: ids.length,
        pending: missing.map((invokeId) => ({ peer, invokeId, waitedMs: ms })),
        marks: missing.slice(0, 3).map((id) => peer.requests.get(id)),
      });
    }
    return byId;
  }

  /** The query this run uses for data: its plain reply, or a skip when the host does not answer it with QUERY_RESP. */
  async dataReply(peer) {
    const r = await this.ask(peer, {}, 'a query of the declared subtype');
    if (r.type !== 'QUERY_RESP' || r.status !== 0) {
      throw new CaseSkipped(`subtype '${this.options.subtype}' is answered ${brief(r)}, not QUERY_RESP: give --subtype one the host answers with data`);
    }
    return r;
  }

  /** A random session key K and its SESSION_KEY tag (K||K under the private key), and the session cipher. */
  sessionKey() {
    const k = crypto.randomBytes(8);
    return { sealed: des.sealSessionKey(this.options.desKey, k), cipher: des.createSessionCipher(k) };
  }

  note(text) {
    this.notes.push(text);
  }

  closeAll() {
    for (const p of this.peers) if (!p.closed) p.close();
  }
}

/** Fails the case unless ok, with the observed text; details as failure() takes them. */
function check(ok, observed, details) {
  if (!ok) throw failure(observed, details);
}

module.exports = {
  CaseContext, CaseFailure, CaseSkipped, brief, kind, check, failure, REPLY_WAIT_MS, ROUTER_REQUEST_TIMEOUT_MS,
};
