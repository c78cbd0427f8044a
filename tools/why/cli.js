'use strict';

// ged145 why DAY KEY: a call's records in the decision log (decisions.file, docs/safe-change.md),
// found by the RouterCallDay and RouterCallKey that ICM's Route_Call_Detail shows, and printed for
// a person: what was asked, where it went, what came back, what the router got. Both router sides
// and a query sent again are each a record. --json prints the records as they are. Exit 0 when
// found, 1 when not (one line).

const { UsageError, OperatorError } = require('../../lib/errors');
const { findCall } = require('./find');

const DEFAULT_FILE = '/var/log/ged145/decisions.jsonl';
const MAX_UINT32 = 0xffffffff;

const summary = 'find a call in the decision log by RouterCallDay and RouterCallKey and say why it got its answer';
const usage = `usage: ged145 why DAY KEY [--file FILE] [--json]

  DAY KEY       the call's RouterCallDay and RouterCallKey (ICM's Route_Call_Detail has both)
  --file FILE   the gateway's decisions.file (default: GED145_DECISIONS_FILE, else
                ${DEFAULT_FILE}); its rotated files and every worker's are read too
  --json        the records as JSON, one per line
`;
const options = {
  file: { type: 'string' },
  json: { type: 'boolean' },
};

function callNumber(text, name) {
  if (!/^\d+$/.test(text) || Number(text) > MAX_UINT32) throw new UsageError(`${name} must be a number from 0 to ${MAX_UINT32}, got '${text}'`);
  return Number(text);
}

const shown = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
/** name=value pairs of a record's fields, variables and ECC entries flattened (name=value, vars.var1=...). */
function pairs(fields) {
  const out = [];
  for (const [k, v] of Object.entries(fields || {})) {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) for (const [n, x] of Object.entries(v)) out.push(`${k}.${n}=${shown(x)}`);
    else out.push(`${k}=${shown(v)}`);
  }
  return out.length === 0 ? '(no fields)' : out.join(' ');
}

function went(r) {
  if (r.attempts === 0) return r.source === null ? 'not to the backend' : `not to the backend: answered from the ${r.source}`;
  const where = `${r.route || 'a handler module\'s request'} at ${r.origin}`;
  const tries = r.attempts > 1 ? ` (request ${r.attempts}, after ${r.attempts - 1} other origin(s))` : '';
  return `${where}${tries}; the backend's answer: ${r.backendResult || 'none before the reply'}`;
}

function routerGot(reply) {
  if (reply === null) return 'no reply (the router had gone)';
  if (reply.encrypted) return `${reply.type} status ${reply.status} (an encrypted session: values not recorded)`;
  if (reply.type === 'QUERY_RESP') return `QUERY_RESP status ${reply.status}: ${pairs(reply.fields)}`;
  return `${reply.type} ${reply.status}${reply.error === undefined ? '' : ` "${reply.error}"`}`;
}

/** One record for a person: a heading and a few lines. */
function describe(r) {
  const who = [`side ${r.side === null ? '?' : r.side}`, `session ${r.session} (${r.peer})`, `InvokeID ${r.invokeId}`];
  if (r.worker !== null) who.push(`worker ${r.worker}`);
  return [
    `call ${r.routerCallDay}/${r.routerCallKey} at ${r.time}, ${who.join(', ')}`,
    `  asked:       ${r.subtype === null ? '(no subtype)' : `subtype ${r.subtype}`}, ${pairs(r.query)}`,
    `  went:        ${went(r)}`,
    `  came back:   ${r.outcome}${r.status === null ? '' : ` (${r.status})`}${r.source === null ? '' : ` from the ${r.source}`}`
      + ` in ${r.ms} ms${r.late ? ', at or past the deadline' : ''}`,
    `  router got:  ${routerGot(r.reply)}`,
    `  trace id:    ${r.traceId || '(not traced)'}`,
  ].join('\n');
}

async function main(values, positionals) {
  if (positionals.length !== 2) throw new UsageError('give the call\'s DAY and KEY (RouterCallDay and RouterCallKey)');
  const day = callNumber(positionals[0], 'DAY');
  const key = callNumber(positionals[1], 'KEY');
  const file = values.file || process.env.GED145_DECISIONS_FILE || DEFAULT_FILE;
  const found = await findCall(file, day, key, (problem) => process.stderr.write(`ged145 why: ${problem}\n`));
  if (found.error !== null) throw new OperatorError(`cannot read ${found.dir}: ${found.error} (--file names the gateway's decisions.file)`);
  if (found.files.length === 0) throw new OperatorError(`no decision log at ${file}: is decisions.file set to it? (--file names another)`);
  if (found.records.length === 0) {
    const why = 'not sampled, older than the files kept, or another gateway\'s';
    process.stdout.write(`no record of call ${day}/${key} in ${found.files.length} file(s) of ${file} (${why})\n`);
    process.exitCode = 1;
    return;
  }
  if (values.json) process.stdout.write(found.records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  else process.stdout.write(`${found.records.map(describe).join('\n\n')}\n`);
}

module.exports = {
  summary, usage, options, positionals: true, main, describe,
};
