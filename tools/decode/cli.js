'use strict';

// ged145 decode: GED-145 from hex (argument or stdin), a raw byte file, or a pcap/pcapng capture
// (both directions of every TCP stream reassembled), one line per message, or --json. Encrypted
// fields are decrypted with --des-key. A bad frame is shown where it is; nothing is fatal.

const fs = require('node:fs');
const {
  Framer, decode, des, DIRECTION, ERROR_CODES, DEFAULT_MAX_MESSAGE_LENGTH, MESSAGE_TYPES: T, DEFAULT_PROFILE,
} = require('../../lib/protocol');
const { messageLine } = require('../../lib/message-line');
const { UsageError, OperatorError } = require('../../lib/errors');
const { numberFlag, desKeyFlag } = require('../../lib/cli-flags');
const {
  captureKind, segments, BufferSource, FileSource, CaptureError,
} = require('./capture');
const { readProtocolFile } = require('../../lib/protocol-file');

const summary = 'decode GED-145 bytes: hex, a raw byte file, or a pcap/pcapng capture';
const usage = `usage: ged145 decode [HEX...] [options]

  HEX...                 the bytes as hex (spaces allowed); without HEX or --file, stdin is read
                         (hex text, raw bytes or a capture: told apart by content)
  FILE | --file FILE     a raw byte file, or a pcap/pcapng capture (read as it goes: any size)
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
 * Decodes one direction's bytes as they come: push(bytes, ts) hands each entry to emit(entry) as
 * soon as its frame is complete. `direction` null means each message's direction is taken from
 * its type. cipher: set when an encrypted session opens.
 */
class StreamDecoder {
  constructor({
    direction, maxLength, onMessage, emit, profile = DEFAULT_PROFILE,
  }) {
    this.direction = direction;
    this.profile = profile;
    this.cipher = undefined;
    this.ts = null;
    this.emit = emit;
    this.onMessage = onMessage || (() => {});
    this.framer = new Framer({
      maxMessageLength: maxLength,
      onFrame: (typeId, body) => this.frame(typeId, body),
      onError: (err) => this.emit({ ts: this.ts, direction: this.direction, error: err.reason, text: err.message }),
    });
    this.stopped = false;
  }

  push(bytes, ts = null) {
    this.ts = ts;
    if (this.stopped) return;
    if (this.framer.failed) {
      this.emit({ ts, direction: this.direction, error: 'not_read', text: 'bytes after a fatal frame are not decoded' });
      this.stopped = true;
      return;
    }
    this.framer.push(bytes);
  }

  /** The capture lost bytes of this direction: nothing after them can be framed. */
  gap(missing, ts) {
    if (this.stopped) return;
    this.emit({
      ts, direction: this.direction, error: 'missing', text: `${missing} bytes of this direction are not in the capture; the rest of it is not decoded`,
    });
    this.stopped = true;
  }

  frame(typeId, body) {
    const tryDecode = (direction) => decode(typeId, body, direction, this.cipher, this.profile);
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
      this.emit({
        ts: this.ts, direction, error: err.reason || 'error', text: err.message, invokeId: err.invokeId,
      });
      return;
    }
    this.onMessage(msg, direction);
    this.emit({ ts: this.ts, direction, message: msg });
  }

  /** What is left unread at the end: a frame cut off by the end of the input. */
  finish() {
    if (!this.stopped && !this.framer.failed && this.framer.bufferedBytes > 0) {
      this.emit({
        ts: this.ts, direction: this.direction, error: 'incomplete', text: `${this.framer.bufferedBytes} bytes of an unfinished frame at the end`,
      });
    }
  }
}

/** Bytes that are not a capture: one stream of frames. */
function decodeBytes(buf, {
  direction, maxLength, emit, profile,
}) {
  const d = new StreamDecoder({
    direction, maxLength, emit, profile,
  });
  d.push(buf);
  d.finish();
}

/** Segments of one direction held back while an earlier one is missing, at most this many bytes. */
const MAX_HELD_BYTES = 4 * 1024 * 1024;

/**
 * One direction of a TCP stream, reassembled as segments come: bytes in sequence order go to
 * its decoder at once; a segment ahead of a missing one waits (bounded); retransmitted bytes are
 * dropped.
 */
class DirectionStream {
  constructor(decoder) {
    this.decoder = decoder;
    this.next = null; // the sequence number of the next byte expected
    this.held = new Map(); // seq -> segment, waiting for the bytes before it
    this.heldBytes = 0;
  }

  add(seg) {
    if (this.next === null) this.next = seg.seq;
    const skip = (this.next - seg.seq) | 0;
    if (skip > 0) {
      if (skip >= seg.data.length) return; // all of it seen already
      this.deliver(seg.data.subarray(skip), seg.ts);
    } else if (skip < 0) {
      if (!this.held.has(seg.seq)) {
        this.held.set(seg.seq, seg);
        this.heldBytes += seg.data.length;
      }
      if (this.heldBytes > MAX_HELD_BYTES) this.giveUp(seg.ts);
      return;
    } else {
      this.deliver(seg.data, seg.ts);
    }
    this.drain();
  }

  deliver(data, ts) {
    this.decoder.push(data, ts);
    this.next = (this.next + data.length) >>> 0;
  }

  /** Held segments that now follow on. */
  drain() {
    for (let progress = true; progress && this.held.size > 0;) {
      progress = false;
      for (const [seq, seg] of this.held) {
        const skip = (this.next - seq) | 0;
        if (skip < 0) continue;
        this.held.delete(seq);
        this.heldBytes -= seg.data.length;
        if (skip < seg.data.length) this.deliver(seg.data.subarray(skip), seg.ts);
        progress = true;
      }
    }
  }

  giveUp(ts) {
    let first = null;
    for (const seq of this.held.keys()) if (first === null || ((seq - first) | 0) < 0) first = seq;
    this.decoder.gap(first === null ? 0 : (first - this.next) >>> 0, ts);
    this.held.clear();
    this.heldBytes = 0;
  }

  finish() {
    if (this.held.size > 0) this.giveUp(this.decoder.ts);
    this.decoder.finish();
  }
}

/**
 * A capture: every TCP stream with GED-145 in it, both directions, each message handed to emit
 * as it is decoded, in capture order. source: a BufferSource or FileSource (capture.js).
 * Returns what the caller may want to tell the user: {streams, encrypted}.
 */
function decodeCapture(source, {
  port, desKey, maxLength, emit, withStream, profile = DEFAULT_PROFILE,
}) {
  const streams = new Map();
  let t0 = null;
  const found = { streams: 0, encrypted: 0 };
  for (const s of segments(source)) {
    if (t0 === null) t0 = s.ts;
    const a = `${s.src}:${s.srcPort}`;
    const b = `${s.dst}:${s.dstPort}`;
    const key = a < b ? `${a}|${b}` : `${b}|${a}`;
    let st = streams.get(key);
    if (st === undefined) {
      st = {
        key, host: null, name: null, cipher: undefined, directions: {},
      };
      streams.set(key, st);
    }
    if (s.syn && !s.ack) st.host = b; // the SYN goes to the host
    if (port !== undefined && s.dstPort === port) st.host = b;
    if (port !== undefined && s.srcPort === port) st.host = a;
    if (s.data.length === 0) continue;
    if (port !== undefined && st.host === null) continue; // not a stream of the given port
    if (st.host === null) st.host = guessHost(s, a, b, maxLength, profile);
    if (st.name === null) {
      st.name = [...new Set([key.split('|').find((e) => e !== st.host), st.host])].join(' -> ');
      found.streams++;
    }
    const direction = b === st.host ? DIRECTION.ROUTER_TO_HOST : DIRECTION.HOST_TO_ROUTER;
    let dir = st.directions[direction];
    if (dir === undefined) {
      const onMessage = (msg) => {
        if (msg.typeId !== T.OPEN_REQ || msg.encryption !== 1) return;
        if (!desKey || !msg.sessionKey) {
          found.encrypted++;
          return;
        }
        const k = des.openSessionKey(desKey, msg.sessionKey);
        st.cipher = k === null ? undefined : des.createSessionCipher(k);
        for (const d of Object.values(st.directions)) d.decoder.cipher = st.cipher;
      };
      const streamEmit = (e) => emit(withStream(st.name) ? { ...e, stream: st.name } : e);
      dir = new DirectionStream(new StreamDecoder({
        direction, maxLength, onMessage, emit: streamEmit, profile,
      }));
      dir.decoder.cipher = st.cipher;
      st.directions[direction] = dir;
    }
    dir.add({ seq: s.seq, data: s.data, ts: s.ts - t0 });
  }
  for (const st of streams.values()) for (const d of Object.values(st.directions)) d.finish();
  return found;
}

/** Without a SYN, from the first segment with data: the side an OPEN_REQ goes to, else the side that receives first. */
function guessHost(s, from, to, maxLength, profile) {
  const d = s.data;
  if (d.length >= 8 && d.readUInt32BE(0) <= maxLength) {
    const type = d.readUInt32BE(4);
    if (type === profile.typeToWire(T.OPEN_REQ)) return to;
    for (const t of [T.OPEN_CONF, T.QUERY_RESP, T.HEARTBEAT_CONF, T.FAILURE_CONF, T.FAILURE_EVENT, T.CLOSE_CONF, T.PARAM_CONF]) {
      if (type === profile.typeToWire(t)) return from;
    }
  }
  return to;
}

/** The TCP streams of a capture that carry data (a first, quick pass: only whether to print each line's stream). */
function countStreams(source, port) {
  const seen = new Set();
  for (const s of segments(source)) {
    if (s.data.length === 0) continue;
    if (port !== undefined && s.dstPort !== port && s.srcPort !== port) continue;
    const a = `${s.src}:${s.srcPort}`;
    const b = `${s.dst}:${s.dstPort}`;
    seen.add(a < b ? `${a}|${b}` : `${b}|${a}`);
    if (seen.size > 1) break;
  }
  return seen.size;
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
  const { profile } = values.protocol ? readProtocolFile(values.protocol) : { profile: DEFAULT_PROFILE };
  const maxLength = numberFlag(values, 'max-length', { int: true, min: 8 }) || DEFAULT_MAX_MESSAGE_LENGTH;
  const port = numberFlag(values, 'port', { int: true, min: 1, max: 65535 });
  if (values.direction !== undefined && !Object.hasOwn(ARROWS, values.direction)) throw new UsageError('--direction takes router-to-host or host-to-router');
  const desKey = desKeyFlag(values);
  let file = values.file;
  let buf = null;
  if (positionals.length > 0) {
    buf = parseHex(positionals.join(''));
    if (buf === null) {
      // `ged145 decode capture.pcap`: a file, as people type it.
      if (positionals.length === 1 && file === undefined && fs.existsSync(positionals[0])) file = positionals[0];
      else throw new UsageError(`HEX must be hex digits (an even number of them); '${positionals[0]}' is not, nor a file (--file FILE)`);
    }
  }
  const write = output(values.json);
  if (buf === null && file !== undefined) {
    const fd = openFile(file);
    try {
      const head = Buffer.alloc(4);
      const n = fs.readSync(fd, head, 0, 4, 0);
      if (captureKind(head.subarray(0, n)) !== null) {
        capture(() => new FileSource(fd), {
          port, desKey, maxLength, write, what: file, profile,
        });
        return;
      }
      buf = fs.readFileSync(fd); // raw bytes, read whole
    } finally {
      fs.closeSync(fd);
    }
  } else if (buf === null) {
    buf = await readStdin();
    if (captureKind(buf) === null) buf = parseHex(buf.toString('latin1')) || buf;
  }
  if (captureKind(buf) !== null) {
    capture(() => new BufferSource(buf), {
      port, desKey, maxLength, write, what: 'the capture', profile,
    });
    return;
  }
  decodeBytes(buf, {
    direction: values.direction || null, maxLength, emit: write.entry, profile,
  });
  write.end();
  if (write.count() === 0) throw new OperatorError('no GED-145 message found');
}

/** Prints entries as they come: lines, or one JSON array written element by element; count(): messages decoded. */
function output(json) {
  let count = 0;
  let open = false;
  return {
    entry(e) {
      if (e.message) count++;
      if (!json) {
        process.stdout.write(`${line(e, e.stream !== undefined)}\n`);
        return;
      }
      process.stdout.write(`${open ? ',\n' : '[\n'}${JSON.stringify(toJson(e), null, 2).replace(/^/gm, '  ')}`);
      open = true;
    },
    end() {
      if (json) process.stdout.write(open ? '\n]\n' : '[]\n');
    },
    count: () => count,
  };
}

/** Decodes a capture from source() (read twice: once to count its streams); a damaged file is one line. */
function capture(source, {
  port, desKey, maxLength, write, what, profile,
}) {
  let found;
  try {
    const streams = countStreams(source(), port);
    found = decodeCapture(source(), {
      port, desKey, maxLength, emit: write.entry, withStream: () => streams > 1, profile,
    });
  } catch (err) {
    if (!(err instanceof CaptureError) && !(err instanceof RangeError)) throw err;
    write.end();
    throw new OperatorError(`${what}: ${err instanceof CaptureError ? err.message : 'a record is cut short or damaged'}`);
  }
  write.end();
  if (found.encrypted > 0 && !desKey) {
    process.stderr.write(`${found.encrypted} session(s) in this capture are DES-encrypted: their fields are shown as they are on the wire; `
      + 'give --des-key KEY (or GED145_DES_KEY) to read them\n');
  }
  if (write.count() === 0) {
    throw new OperatorError(found.streams === 0 ? 'no GED-145 message found: the capture has no TCP stream with data'
      + ' (--port N if the gateway does not listen on the port you expect)' : 'no GED-145 message found');
  }
}

function openFile(file) {
  try {
    return fs.openSync(file, 'r');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${err.code || err.message}`);
  }
}

module.exports = { summary, usage, options, positionals: true, main };
