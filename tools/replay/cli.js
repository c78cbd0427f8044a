'use strict';

// ged145 replay: the router's side of a pcap/pcapng capture sent to a host with its original
// timing, each answer compared with the captured one. The last line counts every request's
// verdict (match, differ, missing, late) and the answers to no request (extra); exit 0 when all
// match and none is extra, 1 otherwise, 2 when the target cannot be reached.

const fs = require('node:fs');
const { DEFAULT_MAX_MESSAGE_LENGTH, STATUS_NAMES } = require('../../lib/protocol');
const { UsageError, OperatorError, CaptureError } = require('../../lib/errors');
const { numberFlag } = require('../../lib/cli-flags');
const { desKeyFlag } = require('../../lib/des-key-flag');
const { messageLine } = require('../../lib/message-line');
const { hideCallerData } = require('../../lib/redact');
const { describeQuery } = require('../../gateway/session/redact');
const { FileSource, captureKind } = require('../decode/capture');
const { parseTarget } = require('../conformance/target');
const { Peer } = require('../conformance/peer');
const { replay, REQUEST_TIMEOUT_MS } = require('./replay');

const VERDICTS = ['match', 'differ', 'missing', 'late'];

const summary = 'play the router\'s side of a capture against a host and compare the answers';
const usage = `usage: ged145 replay CAPTURE --target HOST:PORT [options]

  CAPTURE                  a pcap or pcapng file (reassembled as ged145 decode does)
  --target HOST:PORT       the host to play it against
  --speed X                X times the captured pace (default 1: the original timing)
  --as-fast-as-possible    every frame back to back, no waiting (lateness is not judged then)
  --request-timeout MS     an answer later than this is late: the router no longer takes it (default 300)
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
  'request-timeout': { type: 'string' },
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
    const t = table.get(type) || {
      sent: 0, match: 0, differ: 0, missing: 0, late: 0,
    };
    t.sent++;
    t[r.verdict]++;
    table.set(type, t);
  }
  return table;
}

/** The last line: every count, and the verdict the exit code follows. */
function headline(result) {
  const { counts, total } = result;
  const pct = total === 0 ? 100 : Math.floor((1000 * counts.match) / total) / 10;
  const late = result.lateJudged ? `${counts.late} late` : 'late not judged';
  return `${counts.match} of ${total} answers match (${pct} %), ${counts.differ} differ, ${counts.missing} missing, ${late}, `
    + `${counts.extra} extra: ${result.same ? 'the host answers as captured' : 'the host answers otherwise'}`;
}

function print(result, values) {
  const out = [];
  out.push(`${'request'.padEnd(16)}${['sent', ...VERDICTS].map((h) => h.padStart(9)).join('')}`);
  for (const [type, t] of byType(result.rows)) {
    out.push(`${type.padEnd(16)}${[t.sent, ...VERDICTS.map((v) => t[v])].map((n) => String(n).padStart(9)).join('')}`);
  }
  const listed = values.all ? result.rows : result.rows.filter((r) => r.verdict !== 'match');
  for (const r of listed) {
    const q = r.request && r.request.type === 'QUERY_REQ' ? r.request : undefined;
    const request = r.request ? show(r.request, values.redact) : `(${r.requestError})`;
    out.push(`${r.verdict === 'match' ? 'match' : `${r.verdict.toUpperCase()} (${r.difference})`}  ${r.stream}  ${request}`);
    out.push(`    captured: ${show(r.captured, values.redact, q)}`);
    out.push(`    replayed: ${show(r.replayed, values.redact, q)}`);
  }
  const { extra } = result.counts;
  if (extra > 0) {
    const undecoded = result.undecoded > 0 ? `, ${result.undecoded} of them frames that do not decode` : '';
    out.push(`${extra} answers from the host to no request of the capture (a second reply, or an unknown InvokeID${undecoded})`);
  }
  if (result.events > 0) out.push(`${result.events} FAILURE_EVENT from the host (about the session, to no request: not compared)`);
  out.push(headline(result));
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main(values, positionals) {
  if (positionals.length !== 1) throw new UsageError('give one CAPTURE file');
  if (!values.target) throw new UsageError('--target HOST:PORT is required');
  if (values.speed !== undefined && values['as-fast-as-possible']) throw new UsageError('--speed and --as-fast-as-possible do not go together');
  const target = parseTarget(values.target);
  const speed = values['as-fast-as-possible'] ? Infinity : numberFlag(values, 'speed', { positive: true }) ?? 1;
  const requestTimeoutMs = numberFlag(values, 'request-timeout', { int: true, min: 1, max: 600_000 }) ?? REQUEST_TIMEOUT_MS;
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
        maxLength: DEFAULT_MAX_MESSAGE_LENGTH, requestTimeoutMs,
      });
    } catch (err) {
      if (err instanceof CaptureError) throw new OperatorError(`${file}: ${err.message}`);
      throw err;
    }
    if (result.total === 0) throw new OperatorError(`${file}: no GED-145 request found`);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({
        target: values.target,
        streams: result.streams,
        total: result.total,
        ...result.counts,
        lateJudged: result.lateJudged,
        same: result.same,
        rows: result.rows.map((r) => ({
          stream: r.stream,
          invokeId: r.invokeId,
          request: r.request && r.request.type,
          verdict: r.verdict,
          difference: r.difference || null,
          ms: r.ms === null ? null : Math.round(r.ms * 10) / 10,
          captured: r.captured && show(r.captured, values.redact), replayed: r.replayed && show(r.replayed, values.redact),
        })),
      }, null, 2)}\n`);
    } else {
      const pace = speed === Infinity ? 'as fast as possible' : `speed ${speed}`;
      process.stdout.write(`GED-145 replay: ${file} -> ${values.target}, ${result.streams} stream(s), ${pace}\n`);
      print(result, values);
    }
    process.exitCode = result.same ? 0 : 1;
  } finally {
    fs.closeSync(fd);
  }
}

module.exports = {
  summary, usage, options, positionals: true, main,
};
