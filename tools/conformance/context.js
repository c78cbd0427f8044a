'use strict';

// What a case works with: fresh connections to the target (each recorded for the report), the
// router's frames built by the project's serializer, and the checks every case repeats (an OPEN
// that must succeed, a reply that must come once). A case fails by throwing a CaseFailure with
// what it observed; anything else a case throws is the kit's own defect and is reported as such.

const crypto = require('node:crypto');
const {
  serialize, des, MESSAGE_NAMES, STATUS_NAMES, ROUTER_REQUEST_TIMEOUT_MS,
} = require('../../lib/protocol');
const { Peer } = require('./peer');
const { CaseFailure, CaseSkipped } = require('../../lib/errors');

/** How long a reply may take before a case calls it missing: generous, a case about timing measures itself. */
const REPLY_WAIT_MS = 1000;
/** How long a case waits after the last expected reply for a second, wrong one. */
const SETTLE_MS = 300;

/** "QUERY_RESP id=7 E_AG_NO_ERROR", short, for observed lines. */
function brief(m) {
  if (m === null || m === undefined) return 'nothing';
  const status = m.status === undefined ? '' : ` ${STATUS_NAMES[m.status] || `status ${m.status}`}`;
  return `${m.type || MESSAGE_NAMES[m.typeId]} id=${m.invokeId === undefined ? '-' : m.invokeId}${status}`;
}

/** A reply's kind, for comparing two replies: "QUERY_RESP E_AG_NO_ERROR". */
const kind = (m) => (m ? `${m.type} ${STATUS_NAMES[m.status] || m.status}` : 'nothing');

class CaseContext {
  /**
   * options: {target: {host, port, tls}, subtype, slowSubtype, failingSubtype, desKey (Buffer|null),
   * version, connectTimeoutMs}.
   */
  constructor(options) {
    this.options = options;
    this.peers = [];
    this.nextInvokeId = 1;
    this.notes = [];
  }

  /** A fresh connection (the case's own); failing to connect fails the case. */
  async connect(name = `connection ${this.peers.length + 1}`) {
    let peer;
    try {
      peer = await Peer.connect(this.options.target, { connectTimeoutMs: this.options.connectTimeoutMs, name });
    } catch (err) {
      throw new CaseFailure(`could not connect (${err.code || err.message}): the host stopped accepting connections`);
    }
    this.peers.push(peer);
    return peer;
  }

  id() {
    return this.nextInvokeId++;
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
    const reply = await peer.waitFor((m) => m.invokeId === invokeId, REPLY_WAIT_MS);
    if (reply === null || reply.type !== 'OPEN_CONF') throw new CaseFailure(`OPEN_REQ id=${invokeId} got ${brief(reply)}, not OPEN_CONF`);
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

  /** Sends one query and waits for its first reply (null when none came). */
  async ask(peer, fields = {}, ms = REPLY_WAIT_MS) {
    const f = this.queryFields(fields);
    peer.send(serialize.queryReq(f, { cipher: fields.cipher }));
    return peer.waitFor((m) => m.invokeId === f.invokeId, ms);
  }

  /** The reply to invokeId, exactly one within the wait and the settle time after it; else the case fails. */
  async exactlyOne(peer, invokeId, what = `request id=${invokeId}`) {
    const first = await peer.waitFor((m) => m.invokeId === invokeId, REPLY_WAIT_MS);
    if (first === null) throw new CaseFailure(`${what} got no reply within ${REPLY_WAIT_MS} ms${peer.closed ? ' (the host closed the connection)' : ''}`);
    await peer.settle(SETTLE_MS);
    const all = peer.messages.filter((m) => m.invokeId === invokeId);
    if (all.length > 1) throw new CaseFailure(`${what} got ${all.length} replies: ${all.map(brief).join(', ')}`);
    return first;
  }

  /** Every id answered exactly once (any order); extra replies to ids never sent fail too. Returns the replies by id. */
  async eachOnce(peer, ids, ms = 3000) {
    const byId = await peer.repliesTo(ids, ms);
    await peer.settle(SETTLE_MS);
    const replies = peer.byInvokeId();
    const missing = ids.filter((id) => !replies.has(id));
    const twice = ids.filter((id) => replies.has(id) && replies.get(id).length > 1);
    const sent = new Set(ids);
    const strangers = [...replies.keys()].filter((id) => !sent.has(id) && !this.isOwn(id));
    const problems = [];
    if (missing.length > 0) problems.push(`${missing.length} of ${ids.length} got no reply (first: id=${missing[0]})`);
    if (twice.length > 0) problems.push(`${twice.length} got more than one reply (first: id=${twice[0]}: ${replies.get(twice[0]).map(brief).join(', ')})`);
    if (strangers.length > 0) problems.push(`${strangers.length} replies carry an InvokeID never sent (first: ${strangers[0]})`);
    if (peer.errors.length > 0) problems.push(`${peer.errors.length} frames from the host did not decode (${peer.errors[0].reason})`);
    if (problems.length > 0) throw new CaseFailure(`${problems.join('; ')}${peer.closed ? '; the host closed the connection' : ''}`);
    return byId;
  }

  /** InvokeIDs this context sent before (an OPEN_REQ's), which may legitimately be answered on the same connection. */
  isOwn(id) {
    return id > 0 && id < this.nextInvokeId;
  }

  /** The query this run uses for data: its plain reply, or a skip when the host does not answer it with QUERY_RESP. */
  async dataReply(peer) {
    const r = await this.ask(peer);
    if (r === null) throw new CaseFailure('a query of the declared subtype got no reply');
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

/** Fails the case unless ok, with the observed text. */
function check(ok, observed) {
  if (!ok) throw new CaseFailure(observed);
}

module.exports = {
  CaseContext, CaseFailure, CaseSkipped, brief, kind, check, REPLY_WAIT_MS, SETTLE_MS, ROUTER_REQUEST_TIMEOUT_MS,
};
