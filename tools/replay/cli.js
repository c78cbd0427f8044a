'use strict';

// ged145 replay: the router's side of a pcap/pcapng capture sent to a host with its original
// timing, each answer compared with the captured one. Exit 0 when every answer matches, 1 when
// one differs, 2 when the target cannot be reached.

const fs = require('node:fs');
const { DEFAULT_MAX_MESSAGE_LENGTH, STATUS_NAMES } = require('../../lib/protocol');
const { UsageError, OperatorError, CaptureError } = require('../../lib/errors');
const { numberFlag, desKeyFlag } = require('../../lib/cli-flags');
const { messageLine } = require('../../lib/message-line');
const { hideCallerData } = require('../../lib/redact');
const { describeQuery } = require('../../gateway/session/redact');
const { FileSource, captureKind } = require('../decode/capture');
const { parseTarget } = require('../conformance/target');
const { Peer } = require('../conformance/peer');
const { replay } = require('./replay');

const summary = 'play the router\'s side of a capture against a host and compare the answers';
const usage = `usage: ged145 replay CAPTURE --target HOST:PORT [options]

  CAPTURE                  a pcap or pcapng file (reassembled as ged145 decode does)
  --target HOST:PORT       the host to play it against
  --speed X                X times the captured pace (default 1: the original timing)
  --as-fast-as-possible    every frame back to back, no waiting
  --tags                   compare the tags of each answer too (default: type and status)
  --redact                 hide caller data (CLID, CED, CDPD, DN, variable values) in what is printed
  --port N                 the host's port in the capture (default: guessed per stream)
  --des-key KEY            the DES private key, for encrypted sessions (or GED145_DES_KEY)
  --all                    list every answer, not only the differences
  --json                   the comparison as JSON
`;

const options = {
  target: { type: 'string' },
  speed: { type: 'string' },
  'as-fast-as-possible': { type: 'boolean' },
  tags: { type: 'boolean' },
  redact: { type: 'boolean' },
  port: { type: 'string' },
  'des-key': { type: 'string' },
  all: { type: 'boolean' },
  json: { type: 'boolean' },
};

/** A message as printed: its line, or with --redact the fields a log line would show. */
function show(m, redact, query) {
  if (m === undefined) return '(none)';
  if (!redact) return messageLine(m);
  const fields = describeQuery(m, undefined, true);
  delete fields.session;
  delete fields.invokeId;
  const status = m.status === undefined ? '' : ` ${STATUS_NAMES[m.status] || m.status}`;
  const error = m.error === undefined ? '' : ` error=${JSON.stringify(hideCallerData(m.error, query || {}))}`;
  return `${m.type} id=${m.invokeId}${status}${Object.keys(fields).length ? ` ${JSON.stringify(fields)}` : ''}${error}`;
}

function byType(rows) {
  const table = new Map();
  for (const r of rows) {
    const type = r.request ? r.request.type : `(${r.requestError})`;
    const t = table.get(type) || { sent: 0, match: 0, differ: 0, unanswered: 0 };
    t.sent++;
    if (r.difference === '') t.match++;
    else if (r.difference === 'no answer') t.unanswered++;
    else t.differ++;
    table.set(type, t);
  }
  return table;
}

function print(result, values) {
  const out = [];
  out.push(`${'request'.padEnd(16)}${'answers'.padStart(8)}${'match'.padStart(8)}${'differ'.padStart(8)}${'unanswered'.padStart(12)}`);
  for (const [type, t] of byType(result.rows)) {
    out.push(`${type.padEnd(16)}${[t.sent, t.match, t.differ].map((n) => String(n).padStart(8)).join('')}${String(t.unanswered).padStart(12)}`);
  }
  const listed = values.all ? result.rows : result.rows.filter((r) => r.difference !== '');
  for (const r of listed) {
    const q = r.request && r.request.type === 'QUERY_REQ' ? r.request : undefined;
    const request = r.request ? show(r.request, values.redact) : `(${r.requestError})`;
    out.push(`${r.difference === '' ? 'match' : `DIFFERS (${r.difference})`}  ${r.stream}  ${request}`);
    out.push(`    captured: ${show(r.captured, values.redact, q)}`);
    out.push(`    replayed: ${show(r.replayed, values.redact, q)}`);
  }
  if (result.extra > 0) out.push(`${result.extra} answers from the host to no request of the capture (a second reply, or an unknown InvokeID)`);
  const pct = result.total === 0 ? 100 : Math.floor((1000 * result.matched) / result.total) / 10;
  out.push(`${result.matched} of ${result.total} answers match (${pct} %)`);
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main(values, positionals) {
  if (positionals.length !== 1) throw new UsageError('give one CAPTURE file');
  if (!values.target) throw new UsageError('--target HOST:PORT is required');
  if (values.speed !== undefined && values['as-fast-as-possible']) throw new UsageError('--speed and --as-fast-as-possible do not go together');
  const target = parseTarget(values.target);
  const speed = values['as-fast-as-possible'] ? Infinity : numberFlag(values, 'speed', { positive: true }) ?? 1;
  const file = positionals[0];
  let fd;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${err.code || err.message}`);
  }
  try {
    const head = Buffer.alloc(4);
    if (captureKind(head.subarray(0, fs.readSync(fd, head, 0, 4, 0))) === null) throw new OperatorError(`${file} is not a pcap or pcapng capture`);
    try {
      (await Peer.connect(target)).close();
    } catch (err) {
      process.stderr.write(`ged145 replay: cannot reach ${values.target}: ${err.code || err.message}\n`);
      process.exitCode = 2;
      return;
    }
    let result;
    try {
      result = await replay(new FileSource(fd), {
        target, speed, tags: Boolean(values.tags), desKey: desKeyFlag(values), port: numberFlag(values, 'port', { int: true, min: 1, max: 65535 }),
        maxLength: DEFAULT_MAX_MESSAGE_LENGTH,
      });
    } catch (err) {
      if (err instanceof CaptureError) throw new OperatorError(`${file}: ${err.message}`);
      throw err;
    }
    if (result.total === 0) throw new OperatorError(`${file}: no GED-145 request found`);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({
        target: values.target, streams: result.streams, matched: result.matched, total: result.total, extra: result.extra,
        rows: result.rows.map((r) => ({
          stream: r.stream, invokeId: r.invokeId, request: r.request && r.request.type, difference: r.difference || null,
          captured: r.captured && show(r.captured, values.redact), replayed: r.replayed && show(r.replayed, values.redact),
        })),
      }, null, 2)}\n`);
    } else {
      const pace = speed === Infinity ? 'as fast as possible' : `speed ${speed}`;
      process.stdout.write(`GED-145 replay: ${file} -> ${values.target}, ${result.streams} stream(s), ${pace}\n`);
      print(result, values);
    }
    process.exitCode = result.matched === result.total && result.extra === 0 ? 0 : 1;
  } finally {
    fs.closeSync(fd);
  }
}

module.exports = {
  summary, usage, options, positionals: true, main,
};
