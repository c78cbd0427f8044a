'use strict';

// One line per decoded GED-145 message, for people: the router simulator's --show and the trace
// of `ged145 decode`. Type, InvokeID, status, then every field and tag that is present.

const { STATUS_NAMES } = require('./protocol');

const FIELDS = ['version', 'idleTimeoutMs', 'encryption', 'routerCallDay', 'routerCallKey', 'paramId', 'paramValue',
  'subtype', 'clid', 'dn', 'ced', 'cdpd', 'routingClient', 'config', 'error'];

const show = (v) => (typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v));

/** "QUERY_RESP id=5 E_AG_NO_ERROR vars={"1":"gold"} ecc={...}" */
function messageLine(msg) {
  const parts = [msg.type, `id=${msg.invokeId === undefined ? '-' : msg.invokeId}`];
  if (msg.status !== undefined) parts.push(STATUS_NAMES[msg.status] || `status=${msg.status}`);
  if (msg.duplicate) parts.push('duplicate');
  if (msg.noScriptReply) parts.push('noScriptReply');
  for (const k of FIELDS) if (msg[k] !== undefined && msg[k] !== null) parts.push(`${k}=${show(msg[k])}`);
  if (msg.sessionKey !== undefined) parts.push(`sessionKey=${msg.sessionKey.toString('hex')}`);
  if (msg.vars !== undefined) parts.push(`vars=${show(msg.vars)}`);
  if (msg.ecc !== undefined) parts.push(`ecc=${show(msg.ecc)}`);
  if (msg.eccArrays !== undefined) parts.push(`eccArrays=${show(msg.eccArrays)}`);
  return parts.join(' ');
}

module.exports = { messageLine };
