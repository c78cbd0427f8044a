'use strict';

// Which frame answers which request, and what is wrong with a connection's replies as a whole.
// A reply counts for a request only when it carries the request's InvokeID and is of a type the
// protocol allows for that request (docs/protocol.md section 3: type + 1, or FAILURE_CONF in its
// place); a HEARTBEAT_CONF with a query's InvokeID answers nothing. The sweep runs once a case's
// connection has been quiet for longer than the router's own timeouts, so "exactly once" is
// judged to the end of the connection, not within a window.

const { MESSAGE_TYPES: T, MESSAGE_NAMES, STATUS_NAMES } = require('../../lib/protocol');

/** The replies each request type may get; any other frame type with its InvokeID is a wrong reply. */
const REPLY_TYPES = Object.freeze({
  [T.OPEN_REQ]: [T.OPEN_CONF, T.FAILURE_CONF],
  [T.CLOSE_REQ]: [T.CLOSE_CONF, T.FAILURE_CONF],
  [T.HEARTBEAT_REQ]: [T.HEARTBEAT_CONF, T.FAILURE_CONF],
  [T.QUERY_REQ]: [T.QUERY_RESP, T.FAILURE_CONF],
  [T.PARAM_REQ]: [T.PARAM_CONF, T.FAILURE_CONF],
});
/** A frame of a type the host must not take (an unknown type, a QUERY_RESP from the router) is refused with FAILURE_CONF. */
const REFUSAL = Object.freeze([T.FAILURE_CONF]);

const typeName = (typeId) => MESSAGE_NAMES[typeId] || `type ${typeId}`;
const allowedFor = (requestType) => REPLY_TYPES[requestType] || REFUSAL;
const allowedText = (requestType) => allowedFor(requestType).map(typeName).join(' or ');

/** "QUERY_RESP id=7 E_AG_NO_ERROR", short, for observed lines. */
function brief(m) {
  if (m === null || m === undefined) return 'nothing';
  const status = m.status === undefined ? '' : ` ${STATUS_NAMES[m.status] || `status ${m.status}`}`;
  return `${m.type || typeName(m.typeId)} id=${m.invokeId === undefined ? '-' : m.invokeId}${status}`;
}

const at = (ms) => `${Math.round(ms)} ms`;

/** Is m a reply the protocol allows to this request ({typeId})? */
function answers(request, m) {
  return m.invokeId === request.invokeId && allowedFor(request.typeId).includes(m.typeId);
}

/** The request a reply with an unknown InvokeID most likely meant: one whose id is one off, else the last one sent before it. */
function nearestRequest(peer, m) {
  for (const d of [1, -1]) {
    const r = peer.requests.get((m.invokeId - d) >>> 0);
    if (r && allowedFor(r.typeId).includes(m.typeId)) return [r, `one ${d > 0 ? 'more' : 'less'} than the id of`];
  }
  return [peer.lastRequestBefore(m.receivedAt), 'the last request before it'];
}

/**
 * Every problem with a connection's replies, each {cause, text, marks (messages and requests to
 * mark in the exchange)}: a second reply to one request, a reply of a type the request does not
 * allow, a reply whose InvokeID no request on this connection carried.
 */
function sweep(peer) {
  const findings = [];
  const replies = new Map(); // invokeId -> the allowed replies, in order
  for (const m of peer.messages) {
    if (m.invokeId === undefined) continue; // FAILURE_EVENT: unsolicited by definition
    const request = peer.requests.get(m.invokeId);
    if (request === undefined) {
      const [near, how] = nearestRequest(peer, m);
      findings.push({
        cause: 'replies with another InvokeID',
        text: `a reply with another InvokeID: ${brief(m)} at ${at(m.receivedAt)}, and no request on ${peer.name} carried id=${m.invokeId}`
          + `${near ? ` (${how}: ${typeName(near.typeId)} id=${near.invokeId})` : ''}`,
        marks: [m, near].filter(Boolean),
      });
    } else if (!allowedFor(request.typeId).includes(m.typeId)) {
      findings.push({
        cause: 'replies with another type',
        text: `a reply of another type: ${brief(m)} at ${at(m.receivedAt)} to ${typeName(request.typeId)} id=${request.invokeId}`
          + ` (it allows ${allowedText(request.typeId)})`,
        marks: [m, request],
      });
    } else {
      if (!replies.has(m.invokeId)) replies.set(m.invokeId, []);
      replies.get(m.invokeId).push(m);
    }
  }
  for (const [id, list] of replies) {
    if (list.length < 2) continue;
    const request = peer.requests.get(id);
    findings.push({
      cause: 'answers twice',
      text: `${list.length} replies to ${typeName(request.typeId)} id=${id}: ${list.map((m) => `${brief(m)} at ${at(m.receivedAt)}`).join(', ')}`,
      marks: [request, ...list],
    });
  }
  if (peer.errors.length > 0) {
    findings.push({
      cause: 'sends frames that do not decode',
      text: `${peer.errors.length} frame(s) from the host did not decode: ${peer.errors[0].reason}: ${peer.errors[0].message}`,
      marks: [],
    });
  }
  // One finding per cause and connection is what a vendor acts on; the rest are counted.
  const byCause = new Map();
  for (const f of findings) {
    if (!byCause.has(f.cause)) byCause.set(f.cause, { ...f, count: 0 });
    byCause.get(f.cause).count++;
  }
  return [...byCause.values()].map((f) => (f.count > 1 ? { ...f, text: `${f.text}; and ${f.count - 1} more like it on ${peer.name}` } : f));
}

module.exports = {
  REPLY_TYPES, answers, allowedFor, allowedText, sweep, brief, typeName,
};
