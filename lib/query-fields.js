'use strict';

// The names a QUERY_REQ's fields go by in settings and logs, in one place: URL
// placeholders (routes.<subtype>.url), cache key fields (cache.key), the targets of a response
// mapping, and the caller data a log line hides under log.redact. The schema's messages, the
// route compiler, the cache and the log redaction all read these lists; none keeps its own.

const { VAR_NUMBER } = require('./protocol/constants');

/** The caller's data: hidden in logs under log.redact (gateway/session/redact.js, lib/redact.js). */
const CALLER_FIELDS = Object.freeze(['clid', 'ced', 'cdpd', 'dn']);
/** Fields a URL placeholder may name, beside vars.N and ecc.NAME. */
const PLACEHOLDER_FIELDS = Object.freeze(['subtype', 'invokeId', 'routerCallDay', 'routerCallKey', 'ced', 'clid', 'cdpd', 'routingClient', 'dn']);
/** Fields a cache key may name, beside vars.N and ecc.NAME: what tells one caller's question from another's. */
const KEY_FIELDS = Object.freeze(['subtype', 'clid', 'dn', 'ced', 'cdpd', 'routingClient']);
/** Answer fields a response mapping may fill, beside vars.N and ecc.NAME. */
const TARGET_FIELDS = Object.freeze(['ced', 'cdpd']);

/** vars.N, a peripheral variable as a placeholder, a cache key field or a response target. */
const VAR_KEY = new RegExp(`^vars\\.${VAR_NUMBER}$`);
const ECC_KEY = /^ecc\..+$/;

const placeholders = new Set(PLACEHOLDER_FIELDS);
const keys = new Set(KEY_FIELDS);

const isPlaceholder = (name) => placeholders.has(name) || VAR_KEY.test(name) || ECC_KEY.test(name);
const isKeyField = (name) => keys.has(name) || VAR_KEY.test(name) || ECC_KEY.test(name);
/** What a response mapping may fill (a target field, vars.N, ecc.NAME), as a JSON Schema pattern (the schema's response mapping). */
const TARGET_PATTERN = `^(vars\\.${VAR_NUMBER}|ecc\\..+|${TARGET_FIELDS.join('|')})$`;

/** A field's value in a decoded query: clid, vars.1, ecc.user.acct, routerCallKey...; undefined when absent or not a field. */
function fieldValue(q, name) {
  if (name.startsWith('vars.')) return q.vars ? q.vars[name.slice(5)] : undefined;
  if (name.startsWith('ecc.')) return q.ecc ? q.ecc[name.slice(4)] : undefined;
  return placeholders.has(name) ? q[name] : undefined;
}

/** How a setting's message lists the names: "subtype, clid, ..., vars.N, ecc.NAME". */
const listed = (fields) => [...fields, 'vars.N', 'ecc.NAME'].join(', ');

module.exports = { CALLER_FIELDS, KEY_FIELDS, TARGET_FIELDS, TARGET_PATTERN, isPlaceholder, isKeyField, fieldValue, listed };
