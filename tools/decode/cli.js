'use strict';

// ged145 decode: GED-145 from hex (argument or stdin), a raw byte file, or a pcap/pcapng capture
// (both directions of every TCP stream reassembled), one line per message, or --json. Encrypted
// fields are decrypted with --des-key. A bad frame is shown where it is; nothing is fatal.

const fs = require('node:fs');
const {
  Framer, decode, des, DIRECTION, ERROR_CODES, DEFAULT_MAX_MESSAGE_LENGTH, MESSAGE_TYPES: T, profile: { typeToWire },
} = require('../../lib/protocol');
const { messageLine } = require('../../lib/message-line');
const { UsageError } = require('../../lib/errors');
const { numberFlag, desKeyFlag } = require('../../lib/cli-flags');
const { captureKind, segments } = require('./capture');
const { applyProtocolFile } = require('../../lib/protocol-file');

const summary = 'decode GED-145 bytes: hex, a raw byte file, or a pcap/pcapng capture';
const usage = `usage: ged145 decode [HEX...] [options]

  HEX...                 the bytes as hex (spaces allowed); without HEX or --file, stdin is read
                         (hex text, raw bytes or a capture: told apart by content)
  --file FILE            a raw byte file, or a pcap/pcapng capture
  --port N               in a capture: the GED-145 host's port (default: guessed per stream from
                         the SYN, or from the side that sends OPEN_REQ)
  --direction D          for raw bytes: router-to-host or host-to-router (default: by message type)
  --des-key KEY          the DES private key (16 hex digits or 8 ASCII characters; or GED145_DES_KEY):
                         encrypted sessions in a capture are decrypted from their OPEN_REQ on
  --max-length N         the MessageLength limit (default ${DEFAULT_MAX_MESSAGE_LENGTH})
  --json                 a JSON array instead of lines
  --protocol FILE        the protocol profile: a gateway config file, or its "protocol" section
`;

const options = {
  file: { type: 'string' },
  port: { type: 'string' },
  direction: { type: 'string' },
  'des-key': { type: 'string' },
  'max-length': { type: 'string' },
  json: { type: 'boolean' },
  protocol: { type: 'string' },
};

const ARROWS = { [DIRECTION.ROUTER_TO_HOST]: 'router->host', [DIRECTION.HOST_TO_ROUTER]: 'host->router' };
const OTHER = { [DIRECTION.ROUTER_TO_HOST]: DIRECTION.HOST_TO_ROUTER, [DIRECTION.HOST_TO_ROUTER]: DIRECTION.ROUTER_TO_HOST };

/** Hex text -> bytes, or null when it is not hex. */
function parseHex(text) {
  const t = text.replace(/0x/gi, '').replace(/[\s:,-]/g, '');
  if (t.length === 0 || t.length % 2 !== 0 || !/^[0-9a-f]+$/i.test(t)) return null;
  return Buffer.from(t, 'hex');
}

/**
 * Decodes one direction's bytes as they come: push(bytes, ts) -> entries. `direction` null means
 * each message's direction is taken from its type. cipher: set when an encrypted session opens.
 */
class StreamDecoder {
  constructor({ direction, maxLength, onMessage }) {
    this.direction = direction;
    this.cipher = undefined;
    this.entries = [];
    this.ts = null;
    this.onMessage = onMessage || (() => {});
    this.framer = new Framer({
      maxMessageLength: maxLength,
      onFrame: (typeId, body) => this.frame(typeId, body),
      onError: (err) => this.entries.push({ ts: this.ts, direction: this.direction, error: err.code, text: err.message }),
    });
    this.stopped = false;
  }

  push(bytes, ts = null) {
    this.ts = ts;
    if (this.framer.failed) {
      if (!this.stopped) this.entries.push({ ts, direction: this.direction, error: 'not-read', text: 'bytes after a fatal frame are not decoded' });
      this.stopped = true;
      return;
    }
    this.framer.push(bytes);
  }

  frame(typeId, body) {
    const tryDecode = (direction) => decode(typeId, body, direction, this.cipher);
    let direction = this.direction || DIRECTION.ROUTER_TO_HOST;
    let msg;
    try {
      try {
        msg = tryDecode(direction);
      } catch (err) {
        if (this.direction !== null || err.code !== ERROR_CODES.WRONG_DIRECTION) throw err;
        direction = OTHER[direction];
        msg = tryDecode(direction);
      }
    } catch (err) {
      this.entries.push({
        ts: this.ts, direction, error: err.code || 'error', text: err.message, invokeId: err.invokeId,
      });
      return;
    }
    this.entries.push({ ts: this.ts, direction, message: msg });
    this.onMessage(msg, direction);
  }

  /** What is left unread at the end: a frame cut off by the end of the input. */
  finish() {
    if (!this.framer.failed && this.framer.bufferedBytes > 0) {
      this.entries.push({
        ts: this.ts, direction: this.direction, error: 'incomplete', text: `${this.framer.bufferedBytes} bytes of an unfinished frame at the end`,
      });
    }
    return this.entries;
  }
}

/** Bytes that are not a capture: one stream of frames. */
function decodeBytes(buf, { direction, maxLength }) {
  const d = new StreamDecoder({ direction, maxLength });
  d.push(buf);
  return d.finish();
}

/** A capture: every TCP stream with GED-145 in it, both directions, in time order. */
function decodeCapture(buf, { port, desKey, maxLength }) {
  const streams = new Map();
  for (const s of segments(buf)) {
    const a = `${s.src}:${s.srcPort}`;
    const b = `${s.dst}:${s.dstPort}`;
    const key = a < b ? `${a}|${b}` : `${b}|${a}`;
    let st = streams.get(key);
    if (st === undefined) {
      st = { key, segs: [], host: null };
      streams.set(key, st);
    }
    if (s.syn && !s.ack) st.host = b; // the SYN goes to the host
    if (port !== undefined && s.dstPort === port) st.host = b;
    if (port !== undefined && s.srcPort === port) st.host = a;
    st.segs.push({ ...s, from: a, to: b });
  }
  const t0 = Math.min(...[...streams.values()].flatMap((st) => st.segs.map((s) => s.ts)), Infinity);
  const out = [];
  for (const st of streams.values()) {
    if (port !== undefined && st.host === null) continue; // not a stream of the given port
    const withData = st.segs.filter((s) => s.data.length > 0);
    if (withData.length === 0) continue;
    if (st.host === null) st.host = guessHost(withData, maxLength);
    const ordered = [];
    for (const from of new Set(withData.map((s) => s.from))) ordered.push(...inOrder(withData.filter((s) => s.from === from)));
    ordered.sort((x, y) => x.ts - y.ts);
    let cipher;
    const decoders = {};
    const streamName = [...new Set([st.key.split('|').find((e) => e !== st.host), st.host])].join(' -> ');
    const onMessage = (msg) => {
      if (msg.typeId === T.OPEN_REQ && msg.encryption === 1 && desKey && msg.sessionKey) {
        const k = des.openSessionKey(desKey, msg.sessionKey);
        cipher = k === null ? undefined : des.createSessionCipher(k);
        for (const d of Object.values(decoders)) d.cipher = cipher;
      }
    };
    for (const seg of ordered) {
      const direction = seg.to === st.host ? DIRECTION.ROUTER_TO_HOST : DIRECTION.HOST_TO_ROUTER;
      if (!decoders[direction]) {
        decoders[direction] = new StreamDecoder({ direction, maxLength, onMessage });
        decoders[direction].cipher = cipher;
      }
      decoders[direction].push(seg.data, seg.ts - t0);
    }
    for (const d of Object.values(decoders)) out.push(...d.finish().map((e) => ({ ...e, stream: streamName })));
  }
  return out.sort((x, y) => x.ts - y.ts);
}

/** A direction's segments in sequence order, retransmitted bytes dropped. */
function inOrder(segs) {
  const sorted = [...segs].sort((x, y) => ((x.seq - y.seq) | 0));
  const out = [];
  let next = null;
  for (const s of sorted) {
    let data = s.data;
    if (next !== null) {
      const skip = (next - s.seq) | 0;
      if (skip >= data.length) continue; // all of it seen already
      if (skip > 0) data = data.subarray(skip);
    }
    out.push({ ...s, data });
    next = (s.seq + s.data.length) >>> 0;
  }
  return out;
}

/** Without a SYN: the host is the side an OPEN_REQ goes to, else the side that receives first. */
function guessHost(segs, maxLength) {
  for (const s of segs) {
    if (s.data.length >= 8 && s.data.readUInt32BE(4) === typeToWire(T.OPEN_REQ) && s.data.readUInt32BE(0) <= maxLength) return s.to;
  }
  return segs[0].to;
}

function line(e, withStream) {
  const time = e.ts === null || e.ts === undefined ? '-' : e.ts.toFixed(6);
  const where = withStream ? `${e.stream}  ` : '';
  const dir = e.direction ? ARROWS[e.direction] : '?';
  const what = e.message ? messageLine(e.message) : `! ${e.error}: ${e.text}${e.invokeId !== undefined ? ` (InvokeID ${e.invokeId})` : ''}`;
  return `${time.padStart(10)}  ${where}${dir.padEnd(12)}  ${what}`;
}

function toJson(e) {
  const out = {
    time: e.ts === null || e.ts === undefined ? null : Math.round(e.ts * 1e6) / 1e6, direction: e.direction ? ARROWS[e.direction] : null, stream: e.stream,
  };
  if (e.message) out.message = JSON.parse(JSON.stringify(e.message, (k, v) => (v && v.type === 'Buffer' ? Buffer.from(v.data).toString('hex') : v)));
  else Object.assign(out, { error: e.error, text: e.text, invokeId: e.invokeId });
  return out;
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks);
}

async function main(values, positionals) {
  if (values.protocol) applyProtocolFile(values.protocol);
  const maxLength = numberFlag(values, 'max-length', { int: true, min: 8 }) || DEFAULT_MAX_MESSAGE_LENGTH;
  const port = numberFlag(values, 'port', { int: true, min: 1, max: 65535 });
  if (values.direction !== undefined && !Object.hasOwn(ARROWS, values.direction)) throw new UsageError('--direction takes router-to-host or host-to-router');
  const desKey = desKeyFlag(values);
  let buf;
  if (positionals.length > 0) {
    buf = parseHex(positionals.join(''));
    if (buf === null) throw new UsageError('HEX must be hex digits (an even number of them)');
  } else {
    buf = values.file ? readFile(values.file) : await readStdin();
    if (captureKind(buf) === null && !values.file) buf = parseHex(buf.toString('latin1')) || buf;
  }
  const entries = captureKind(buf) !== null
    ? decodeCapture(buf, { port, desKey, maxLength })
    : decodeBytes(buf, { direction: values.direction || null, maxLength });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(entries.map(toJson), null, 2)}\n`);
    return;
  }
  const streams = new Set(entries.map((e) => e.stream).filter(Boolean));
  for (const e of entries) process.stdout.write(`${line(e, streams.size > 1)}\n`);
  if (entries.length === 0) process.stderr.write('no GED-145 message found\n');
}

function readFile(file) {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${err.code || err.message}`);
  }
}

module.exports = {
  summary, usage, options, positionals: true, main, decodeBytes, decodeCapture, parseHex,
};
