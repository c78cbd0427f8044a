'use strict';

// ged145 conformance: the router's side as a scored test suite against any GED-145 host. A line
// per case, then "N passed, N failed, N skipped"; exit 0 when no MUST case failed (with --strict,
// no SHOULD either), 1 when one did, 2 when the target cannot be reached.

const fs = require('node:fs');
const { UsageError } = require('../../lib/errors');
const { numberFlag } = require('../../lib/cli-flags');
const { desKeyFlag } = require('../../lib/des-key-flag');
const { runSuite, selectCases } = require('./run');
const {
  writeReport, toJson, failureLines, summaryLine,
} = require('./report');
const { parseTarget } = require('./target');

const summary = 'score a GED-145 host against the protocol: the router\'s side as a test suite';
const usage = `usage: ged145 conformance --target HOST:PORT [options]

  --target HOST:PORT       the host to test (it must be listening; nothing else is started)
  --subtype NAME           the subtype to query (default customer.lookup): one the host answers
  --slow-subtype NAME      a subtype the host's backend answers after RequestTimeout (300 ms):
                           runs the cases about replies and heartbeats while the backend is slow
  --failing-subtype NAME   a subtype the host's backend fails: runs the cases about failures
  --des-key KEY            the host's DES private key (16 hex digits or 8 ASCII characters; or
                           GED145_DES_KEY): runs the encrypted-session cases
  --tls                    connect with TLS (every case); --ca FILE verifies the host's
                           certificate, --cert FILE and --key FILE give a client certificate
  --version N              the VersionNumber of OPEN_REQ (default 2)
  --cases GLOB[,GLOB]      only the cases whose id matches (ged145/framing/*, *heartbeat*)
  --strict                 a SHOULD case that fails fails the run too
  --list                   list the cases (id, level, title) and exit
  --json                   print the results as JSON instead of lines
  --report DIR             write DIR/index.json, DIR/junit.xml and DIR/index.html

Levels: MUST (docs/protocol.md, from Cisco's documents or the field), SHOULD (what ged145 decided;
a failure is "non-strict"), INFO (measured). Every case: docs/conformance.md.
`;

const options = {
  target: { type: 'string' },
  subtype: { type: 'string' },
  'slow-subtype': { type: 'string' },
  'failing-subtype': { type: 'string' },
  'des-key': { type: 'string' },
  tls: { type: 'boolean' },
  ca: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  version: { type: 'string' },
  cases: { type: 'string' },
  strict: { type: 'boolean' },
  list: { type: 'boolean' },
  json: { type: 'boolean' },
  report: { type: 'string' },
};

const LABEL_WIDTH = 11;

function readPem(file, flag) {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new UsageError(`--${flag}: cannot read ${file}: ${err.code || err.message}`);
  }
}

function tlsOptions(values, host) {
  if (!values.tls) {
    if (values.ca || values.cert || values.key) throw new UsageError('--ca, --cert and --key go with --tls');
    return null;
  }
  if (Boolean(values.cert) !== Boolean(values.key)) throw new UsageError('--cert and --key go together');
  return {
    servername: /^[\d.:]+$/.test(host) ? undefined : host,
    ...(values.ca ? { ca: readPem(values.ca, 'ca') } : {}),
    ...(values.cert ? { cert: readPem(values.cert, 'cert'), key: readPem(values.key, 'key') } : {}),
    rejectUnauthorized: true,
  };
}

/** The settings of a run from the command line (shared with the tests, which run the kit in-process). */
function runOptions(values) {
  if (!values.target) throw new UsageError('--target HOST:PORT is required');
  const target = parseTarget(values.target);
  return {
    target: { ...target, tls: tlsOptions(values, target.host) },
    subtype: values.subtype || 'customer.lookup',
    slowSubtype: values['slow-subtype'],
    failingSubtype: values['failing-subtype'],
    desKey: desKeyFlag(values),
    version: numberFlag(values, 'version', { int: true, min: 0, max: 0xffffffff }) ?? 2,
    cases: values.cases,
    strict: Boolean(values.strict),
    connectTimeoutMs: 3000,
  };
}

const pad = ' '.repeat(LABEL_WIDTH);

/** A case as the console shows it; a failure as h2spec prints one: the rule and its source, expected and actual, then the exchange. */
function caseLine(r) {
  const head = `${r.result.toUpperCase().replace('-', ' ').padEnd(LABEL_WIDTH)}${r.level.padEnd(7)}${r.id.padEnd(22)} ${r.title} (${r.durationMs} ms)`;
  if (r.result === 'pass') return head;
  if (r.result === 'fail' || r.result === 'non-strict') return [head, ...failureLines(r).map((l) => `${pad}${l}`)].join('\n');
  return `${head}\n${pad}${r.observed}`;
}

/** Failures grouped by cause, then why cases were not run: one finding per defect. */
function causeLines(run) {
  const lines = [];
  if (run.causes.length > 0) lines.push('failures by cause:', ...run.causes.map((c) => `  ${c.cause} (${c.ids.length}): ${c.ids.join(', ')}`));
  const notRun = run.results.find((r) => r.result === 'not-run');
  if (notRun) lines.push(`${run.counts.notRun} case(s) ${notRun.observed}`);
  return lines;
}

async function main(values) {
  if (values.list) {
    const cases = selectCases(values.cases);
    for (const c of cases) process.stdout.write(`${c.id.padEnd(22)} ${c.level.padEnd(7)} ${c.title}${c.needs ? ` [needs --${c.needs.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`)}]` : ''}\n`);
    process.stdout.write(`${cases.length} cases\n`);
    return;
  }
  const opts = runOptions(values);
  if (selectCases(opts.cases).length === 0) throw new UsageError(`--cases ${opts.cases} matches no case (ged145 conformance --list)`);
  if (!values.json) process.stdout.write(`GED-145 conformance: ${values.target}${opts.target.tls ? ' (TLS)' : ''}, subtype ${opts.subtype}\n`);
  const run = await runSuite({ ...opts, onResult: values.json ? undefined : (r) => process.stdout.write(`${caseLine(r)}\n`) });
  if (run.unreachable) {
    process.stderr.write(`ged145 conformance: cannot reach ${run.target}: ${run.unreachable}\n`);
    process.exitCode = 2;
    return;
  }
  if (values.report) writeReport(values.report, run);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(toJson(run), null, 2)}\n`);
  } else {
    const { counts } = run;
    if (counts.nonStrict > 0 && !run.strict) process.stdout.write(`${counts.nonStrict} SHOULD case(s) failed (non-strict: they fail the run with --strict)\n`);
    for (const l of causeLines(run)) process.stdout.write(`${l}\n`);
    if (values.report) process.stdout.write(`report: ${values.report}/index.html\n`);
    process.stdout.write(`${summaryLine(run)}\n`);
  }
  process.exitCode = run.exitCode;
}

module.exports = {
  summary, usage, options, main, runOptions,
};
