'use strict';

const { readProtocolFile } = require('../lib/protocol-file');
const { messageLine } = require('../lib/message-line');
const { Router } = require('./router');
const { ROUTER_DEFAULTS, MODES } = require('./settings');
const { loadScenario } = require('./workload');
const { formatSummary } = require('./format');
const fs = require('node:fs');
const { UsageError, OperatorError } = require('../lib/errors');
const { numberFlag } = require('../lib/cli-flags');
const { desKeyFlag } = require('../lib/des-key-flag');

const summary = 'ICM router simulator: real router timing, pipelined load, fault injection';
const usage = `usage: ged145 router [options]

  --host H               gateway address (default 127.0.0.1)
  --port P               gateway port (default 5000)
  --host-b H --port-b P  side B's target, when it differs from side A's
  --rate N               open loop: N queries/s (default 100)
  --window W             closed loop instead: keep W queries outstanding
  --duration S           seconds to run (default 10)
  --sides A,B            router sides to connect (default A)
  --mode M               ${MODES.join(' | ')} (default none; duplicate with two sides)
  --scenario FILE        query mix as JSON {"queries": [{"weight", "subtype", "clid", ...}]}
  --frag N               split every write at up to N random points (0 = off)
  --byte-by-byte         send every byte as its own write
  --frag-delay MS        pause between the pieces of a write
  --coalesce             send the frames of one tick as one write
  --invalid-rate R       share of queries preceded by an invalid frame (0..1)
  --request-timeout MS   RequestTimeout (default ${ROUTER_DEFAULTS.requestTimeoutMs})
  --late-timeout MS      LateTimeout: a reply later than this counts in LatesToHalf (default
                         ${ROUTER_DEFAULTS.lateTimeoutMs}, as the gateway's routerLateTimeoutMs)
  --heartbeat-interval MS HeartbeatInterval (default ${ROUTER_DEFAULTS.heartbeatIntervalMs})
  --session-retry MS     SessionRetry (default ${ROUTER_DEFAULTS.sessionRetryMs})
  --version N[,N...]     protocol versions to offer, highest first (default 2)
  --connect-info S       ConnectInfo sent as CONFIG by every side, or A=S,B=S one per side
                         (default A=${ROUTER_DEFAULTS.connectInfo.A},B=${ROUTER_DEFAULTS.connectInfo.B})
  --des-key KEY          encrypt (16 hex digits or 8 ASCII characters; or GED145_DES_KEY)
  --tls                  connect with TLS
  --tls-ca FILE          CA that signed the gateway's certificate
  --tls-cert FILE --tls-key FILE   client certificate, when the gateway asks for one
  --pcap FILE            write what is sent and received as a pcap capture (plain TCP only)
  --seed N               seed for the query mix and injection
  --json                 print the summary as JSON
  --quiet                no live progress line
  --show                 print each reply, decoded, one line (latency, type, InvokeID, status, tags)
  --protocol FILE        the protocol profile (message type numbers, status codes, versions): a
                         gateway config file, or its "protocol" section alone
`;

const options = {
  host: { type: 'string', default: '127.0.0.1' },
  port: { type: 'string', default: '5000' },
  'host-b': { type: 'string' },
  'port-b': { type: 'string' },
  rate: { type: 'string' },
  window: { type: 'string' },
  duration: { type: 'string', default: '10' },
  sides: { type: 'string', default: 'A' },
  mode: { type: 'string' },
  scenario: { type: 'string' },
  frag: { type: 'string', default: '0' },
  'byte-by-byte': { type: 'boolean' },
  'frag-delay': { type: 'string', default: '0' },
  coalesce: { type: 'boolean' },
  'invalid-rate': { type: 'string', default: '0' },
  'request-timeout': { type: 'string' },
  'late-timeout': { type: 'string' },
  'heartbeat-interval': { type: 'string' },
  'session-retry': { type: 'string' },
  version: { type: 'string' },
  'connect-info': { type: 'string' },
  seed: { type: 'string' },
  'des-key': { type: 'string' },
  pcap: { type: 'string' },
  tls: { type: 'boolean' },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
  show: { type: 'boolean' },
  protocol: { type: 'string' },
};

const num = (values, key, { int = true, min = 0, max = Infinity } = {}) => numberFlag(values, key, { int, min, max });

/**
 * --connect-info: one text for every side, or "A=...,B=..." (a comma splits only before the next
 * side's "X=", so a ConnectInfo may hold commas).
 */
function connectInfoFlag(value) {
  if (value === undefined || !/^[AB]=/i.test(value)) return value;
  const out = {};
  for (const part of value.split(/,(?=[AB]=)/i)) {
    const side = part[0].toUpperCase();
    if (Object.hasOwn(out, side)) throw new UsageError(`--connect-info names side ${side} twice`);
    out[side] = part.slice(2);
  }
  return out;
}

async function main(values) {
  const { profile, versions: profileVersions } = values.protocol ? readProtocolFile(values.protocol) : {};
  const sides = values.sides.split(',').map((s) => s.trim().toUpperCase());
  if (sides.some((s) => !['A', 'B'].includes(s)) || new Set(sides).size !== sides.length) throw new UsageError('--sides takes A, B or A,B');
  if (values.rate !== undefined && values.window !== undefined) throw new UsageError('give --rate or --window, not both');
  const targets = [{ host: values.host, port: num(values, 'port', { max: 65535 }) }];
  if (values['host-b'] || values['port-b']) targets.push({
    host: values['host-b'] || values.host, port: num(values, 'port-b', { max: 65535 }) || targets[0].port,
  });
  let templates;
  if (values.scenario) {
    try {
      templates = loadScenario(values.scenario);
    } catch (err) {
      throw new UsageError(`--scenario ${values.scenario}: ${err.message}`);
    }
  }
  const desKey = desKeyFlag(values);
  let tlsOptions = null;
  if (values.tls || values['tls-ca'] || values['tls-cert']) {
    const read = (f) => {
      try {
        return fs.readFileSync(f);
      } catch (err) {
        throw new UsageError(`cannot read ${f}: ${err.code}`);
      }
    };
    tlsOptions = {
      ca: values['tls-ca'] ? read(values['tls-ca']) : undefined,
      cert: values['tls-cert'] ? read(values['tls-cert']) : undefined,
      key: values['tls-key'] ? read(values['tls-key']) : undefined,
      servername: values.host === '127.0.0.1' ? 'localhost' : values.host,
    };
  }
  if (values.pcap && tlsOptions) {
    throw new UsageError('--pcap cannot capture a TLS connection (it would hold only encrypted bytes); drop --tls, or capture with tshark and the server key');
  }
  let router;
  try {
    router = new Router({
      desKey,
      profile,
      tls: tlsOptions,
      pcap: values.pcap,
      targets,
      sides,
      mode: values.mode,
      templates,
      seed: num(values, 'seed'),
      invalidRate: num(values, 'invalid-rate', { int: false, max: 1 }),
      injection: {
        frag: num(values, 'frag'), byteByByte: values['byte-by-byte'], fragDelayMs: num(values, 'frag-delay'), coalesce: values.coalesce,
      },
      settings: {
        requestTimeoutMs: num(values, 'request-timeout', { min: 1 }),
        lateTimeoutMs: num(values, 'late-timeout', { min: 1 }),
        heartbeatIntervalMs: num(values, 'heartbeat-interval', { min: 1 }),
        sessionRetryMs: num(values, 'session-retry'),
        versions: values.version ? values.version.split(',').map(Number) : profileVersions,
        connectInfo: connectInfoFlag(values['connect-info']),
      },
    });
  } catch (err) {
    if (err instanceof RangeError) throw new UsageError(err.message);
    throw err;
  }
  const durationMs = num(values, 'duration', { int: false, min: 0.001 }) * 1000;
  const window = num(values, 'window', { min: 1 });
  const rate = num(values, 'rate', { int: false, min: 0.001 }) || 100;
  try {
    await router.start();
  } catch (err) {
    await router.stop({ drainMs: 0 });
    throw new OperatorError(err.message, { cause: err });
  }
  if (values.show) {
    // Each reply, decoded, one line on stdout: a route mapping can be checked without a capture.
    router.on('reply', (msg, latencyMs) => process.stdout.write(`${latencyMs.toFixed(2).padStart(8)} ms  ${messageLine(msg)}\n`));
  }
  const live = !values.quiet && !values.json && !values.show;
  let lastPrint = 0;
  const onTick = () => {
    const now = Date.now();
    if (!live || now - lastPrint < 1000) return;
    lastPrint = now;
    const s = router.stats;
    const line = `sent ${s.sent}  answered ${s.answeredCount}  in flight ${router.outstanding.size}  `
      + `p99 ${s.percentile(99).toFixed(2)} ms  violations ${s.violationCount}`;
    process.stderr.write(process.stderr.isTTY ? `\r${line}\x1b[K` : `${line}\n`);
  };
  let durationCut = false;
  process.once('SIGINT', () => {
    durationCut = true;
    router.cancel();
  });
  if (window !== undefined) await router.runClosedLoop({ window, durationMs, onTick });
  else await router.runOpenLoop({ rate, durationMs, onTick });
  const result = await router.stop();
  if (live && process.stderr.isTTY) process.stderr.write('\n');
  if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else process.stdout.write(formatSummary(
    `GED-145 router simulator: ${sides.join('+')} (${router.mode}) -> ${values.host}:${values.port}${durationCut ? ' (interrupted)' : ''}`, result
  ));
  process.exitCode = result.violations && Object.keys(result.violations).length > 0 ? 1 : 0;
}

module.exports = { summary, usage, options, main };
