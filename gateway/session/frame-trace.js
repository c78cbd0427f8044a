'use strict';

// --trace-frames N (log.traceFrames): the first N frames of each session in each direction, as
// hex and decoded, for checking the first connection of a real router byte by byte against
// docs/protocol.md. Redaction still applies: with log.redact the tag bytes are not shown in the
// hex (nor any body byte of a frame whose type we do not know, whose layout we cannot tell),
// and decoded caller data is hidden as in every other line. Whether to redact is asked per
// frame, so a reload (SIGHUP) that turns log.redact on covers the sessions already open.

const {
  decode, HEADER_LENGTH, MESSAGE_NAMES, fixedLength, DIRECTION, STATUS_NAMES, DEFAULT_PROFILE,
} = require('../../lib/protocol');
const { describeQuery } = require('./redact');

const MAX_HEX_BYTES = 512;

function hexOf(header, body, redact, profile) {
  const fixed = fixedLength(header.readUInt32BE(4), profile);
  let shown = body;
  let note = '';
  if (redact && fixed === undefined && body.length > 0) {
    shown = body.subarray(0, 0);
    note = ` [${body.length} body bytes of an unknown message type redacted]`;
  } else if (redact && fixed !== undefined && body.length > fixed) {
    shown = body.subarray(0, fixed);
    note = ` [${body.length - fixed} tag bytes redacted]`;
  } else if (body.length > MAX_HEX_BYTES) {
    shown = body.subarray(0, MAX_HEX_BYTES);
    note = ` [${body.length - MAX_HEX_BYTES} more bytes]`;
  }
  return [header.toString('hex'), shown.toString('hex'), note.trim()].filter((s) => s !== '').join(' ');
}

/** What a log line shows of a decoded message (caller data redacted as usual). */
function shownMessage(msg, session, redact) {
  if (msg.typeId === undefined) return msg;
  if (msg.type === 'QUERY_REQ' || msg.type === 'QUERY_RESP') {
    const out = describeQuery(msg, session, redact);
    out.type = msg.type;
    if (msg.status !== undefined) out.status = STATUS_NAMES[msg.status] || msg.status;
    return out;
  }
  const out = { type: msg.type, invokeId: msg.invokeId };
  for (const k of ['status', 'error', 'version', 'idleTimeoutMs', 'encryption', 'config', 'paramId', 'paramValue']) {
    if (msg[k] !== undefined) out[k] = k === 'status' ? (STATUS_NAMES[msg[k]] || msg[k]) : msg[k];
  }
  if (redact && out.error !== undefined) out.error = '[redacted]';
  return out;
}

class FrameTrace {
  /** redact: () => boolean, asked per frame. */
  constructor({
    limit, log, meta, redact, profile = DEFAULT_PROFILE,
  }) {
    this.limit = limit;
    this.profile = profile;
    this.log = log;
    this.meta = meta;
    this.redactNow = redact;
    this.in = 0;
    this.out = 0;
    this.cipher = undefined;
  }

  get done() {
    return this.in >= this.limit && this.out >= this.limit;
  }

  /** A frame read from the router (header rebuilt from its type and length). */
  received(typeId, body) {
    if (this.in >= this.limit) return;
    this.in++;
    const header = Buffer.alloc(HEADER_LENGTH);
    header.writeUInt32BE(body.length, 0);
    header.writeUInt32BE(typeId, 4);
    this.write('in', this.in, header, body, DIRECTION.ROUTER_TO_HOST);
  }

  /** A frame the gateway writes. */
  sent(buf) {
    if (this.out >= this.limit) return;
    this.out++;
    this.write('out', this.out, buf.subarray(0, HEADER_LENGTH), buf.subarray(HEADER_LENGTH), DIRECTION.HOST_TO_ROUTER);
  }

  write(direction, n, header, body, readAs) {
    const typeId = header.readUInt32BE(4);
    const redact = this.redactNow();
    let decoded;
    try {
      decoded = shownMessage(decode(typeId, body, readAs, this.cipher, this.profile), this.meta.session, redact);
    } catch (err) {
      decoded = { type: MESSAGE_NAMES[typeId] || `type ${typeId}`, error: `${err.reason}: ${err.message}` };
    }
    this.log.info(`frame ${direction} #${n}`, {
      ...this.meta, hex: hexOf(header, body, redact, this.profile), decoded,
    });
  }
}

module.exports = { FrameTrace };
