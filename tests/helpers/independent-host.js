'use strict';

// A minimal GED-145 application gateway host, written from the protocol description alone
// (PROTOCOL.md and its vectors) without the project's codec or gateway, so that the conformance
// kit is checked against a reading of the protocol other than our own. It answers every query
// itself: QUERY_RESP status 0 with VAR1 = "ok" (no tags for NoScriptReply), after a short random
// delay so that answers leave out of order. No DES, no TLS.
//   node tests/helpers/independent-host.js [port]   (prints "listening PORT")

const net = require('node:net');

const MAX_BODY = 8192;
const T = {
  FAILURE_CONF: 1, FAILURE_EVENT: 2, OPEN_REQ: 3, OPEN_CONF: 4, CLOSE_REQ: 5, CLOSE_CONF: 6,
  HEARTBEAT_REQ: 7, HEARTBEAT_CONF: 8, QUERY_REQ: 9, QUERY_RESP: 10, PARAM_REQ: 11, PARAM_CONF: 12
};
const S = {
  OK: 0, INVALID_VERSION: 1, SESSION_ACTIVE: 2, INVALID_MESSAGE: 4, SESSION_INACTIVE: 5, INVALID_KEY: 8
};
const SUPPORTED_VERSIONS = new Set([1, 2, 3]);
const TAG_ECC = 20;
const TAG_ECC_ARRAY = 21;
const TAG_VAR1 = 9;

function frame(type, body) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.writeUInt32BE(type, 4);
  return Buffer.concat([head, body]);
}

function words(...values) {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, i * 4));
  return b;
}

function tag(id, text) {
  const data = Buffer.from(text, 'latin1');
  return Buffer.concat([Buffer.from([id, data.length]), data]);
}

// Tags run from `offset` to the end of the body; false when one overruns or is malformed.
function tagsWellFormed(body, offset) {
  let at = offset;
  while (at < body.length) {
    if (at + 2 > body.length) return false;
    const id = body[at];
    const len = body[at + 1];
    const end = at + 2 + len;
    if (end > body.length) return false;
    if ((id === TAG_ECC || id === TAG_ECC_ARRAY) && (len === 0 || body[end - 1] !== 0)) return false;
    at = end;
  }
  return true;
}

class Session {
  constructor(socket) {
    this.socket = socket;
    this.pending = Buffer.alloc(0);
    this.open = false;
    this.closing = null; // the CLOSE_REQ's InvokeID while queries are still out
    this.outstanding = 0;
    this.idleMs = 0;
    this.idleTimer = null;
    this.fatal = false;
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () => clearTimeout(this.idleTimer));
  }

  send(type, body) {
    if (!this.socket.destroyed) this.socket.write(frame(type, body));
  }

  fail(invokeId, status) {
    this.send(T.FAILURE_CONF, words(invokeId, status));
  }

  onData(chunk) {
    this.touch();
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 8) {
      const length = this.pending.readUInt32BE(0);
      if (length > MAX_BODY) { // no frame boundary can be trusted after this: answer what is out, then close
        this.socket.pause();
        this.pending = Buffer.alloc(0);
        this.fatal = true;
        if (this.outstanding === 0) this.socket.end();
        return;
      }
      if (this.pending.length < 8 + length) return;
      const type = this.pending.readUInt32BE(4);
      const body = this.pending.subarray(8, 8 + length);
      this.pending = this.pending.subarray(8 + length);
      this.onMessage(type, body);
    }
  }

  touch() {
    if (this.idleMs <= 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.socket.destroy(), this.idleMs);
  }

  onMessage(type, body) {
    if (body.length < 4) {
      this.fail(0, S.INVALID_MESSAGE);
      return;
    }
    const invokeId = body.readUInt32BE(0);
    switch (type) {
      case T.OPEN_REQ: return this.onOpen(invokeId, body);
      case T.CLOSE_REQ: return this.onClose(invokeId);
      case T.HEARTBEAT_REQ: return this.send(T.HEARTBEAT_CONF, words(invokeId));
      case T.QUERY_REQ: return this.onQuery(invokeId, body);
      case T.PARAM_REQ: return this.onParam(invokeId, body);
      default: return this.fail(invokeId, S.INVALID_MESSAGE);
    }
  }

  onOpen(invokeId, body) {
    if (body.length < 16 || !tagsWellFormed(body, 16)) return this.fail(invokeId, S.INVALID_MESSAGE);
    if (this.open) return this.fail(invokeId, S.SESSION_ACTIVE);
    if (!SUPPORTED_VERSIONS.has(body.readUInt32BE(4))) return this.fail(invokeId, S.INVALID_VERSION);
    if (body.readUInt32BE(12) !== 0) return this.fail(invokeId, S.INVALID_KEY); // no shared key here
    this.open = true;
    this.closing = null;
    this.idleMs = body.readUInt32BE(8);
    this.touch();
    return this.send(T.OPEN_CONF, words(invokeId));
  }

  onClose(invokeId) {
    if (!this.open) return this.send(T.CLOSE_CONF, words(invokeId));
    this.open = false;
    if (this.outstanding === 0) return this.send(T.CLOSE_CONF, words(invokeId));
    this.closing = invokeId;
    return undefined;
  }

  onParam(invokeId, body) {
    if (body.length < 12) return this.fail(invokeId, S.INVALID_MESSAGE);
    if (!this.open) return this.fail(invokeId, S.SESSION_INACTIVE);
    return this.send(T.PARAM_CONF, words(invokeId));
  }

  onQuery(invokeId, body) {
    if (body.length < 13 || !tagsWellFormed(body, 13)) return this.fail(invokeId, S.INVALID_MESSAGE);
    if (!this.open) return this.fail(invokeId, S.SESSION_INACTIVE);
    const noScriptReply = (body[12] & 0x02) !== 0;
    this.outstanding++;
    setTimeout(() => this.answer(invokeId, noScriptReply), Math.floor(Math.random() * 5));
    return undefined;
  }

  answer(invokeId, noScriptReply) {
    const tags = noScriptReply ? Buffer.alloc(0) : tag(TAG_VAR1, 'ok');
    this.send(T.QUERY_RESP, Buffer.concat([words(invokeId, S.OK), tags]));
    this.outstanding--;
    if (this.outstanding === 0 && this.closing !== null) {
      this.send(T.CLOSE_CONF, words(this.closing));
      this.closing = null;
    }
    if (this.outstanding === 0 && this.fatal) this.socket.end();
  }
}

function listen(port = 0, host = '127.0.0.1') {
  const server = net.createServer((socket) => new Session(socket));
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

module.exports = { listen };

if (require.main === module) {
  listen(Number(process.argv[2] || 0)).then((server) => {
    process.stdout.write(`listening ${server.address().port}\n`);
  });
}
