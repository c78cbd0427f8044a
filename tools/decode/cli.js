'use strict';

// ged145 decode: GED-145 from hex (argument or stdin), a raw byte file, or a pcap/pcapng capture
// (both directions of every TCP stream reassembled), one line per message, or --json. Encrypted
// fields are decrypted with --des-key. A bad frame is shown where it is; nothing is fatal.

const fs = require('node:fs');
const { DIRECTION, DEFAULT_MAX_MESSAGE_LENGTH, DEFAULT_PROFILE } = require('../../lib/protocol');
const { messageLine } = require('../../lib/message-line');
const { UsageError, OperatorError } = require('../../lib/errors');
const { numberFlag } = require('../../lib/cli-flags');
const { desKeyFlag } = require('../../lib/des-key-flag');
const {
  captureKind, segments, BufferSource, FileSource, CaptureError,
} = require('./capture');
const { decodeBytes, decodeCapture } = require('./reassemble');
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

/** Hex text -> bytes, or null when it is not hex. */
function parseHex(text) {
  const t = text.replace(/0x/gi, '').replace(/[\s:,-]/g, '');
  if (t.length === 0 || t.length % 2 !== 0 || !/^[0-9a-f]+$/i.test(t)) return null;
  return Buffer.from(t, 'hex');
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
