'use strict';

// Compressed answers (Content-Encoding, RFC 9110 section 8.4), for both engines: each hands over
// the bytes as they were sent (undici's dispatcher never decodes; axios is told not to), so one
// decoder decides what a coded body is, a cut one included. The body is decoded as it arrives,
// by a node:zlib stream, and counted as it comes out: past the limit the stream is destroyed, so
// a body that inflates to a gigabyte (a zip bomb) costs at most the limit of heap and ends as
// too_large. An answer without Content-Encoding only has its text made here (textOf).

const zlib = require('node:zlib');

/**
 * What the gateway asks for, on every backend request and the token endpoint's: answers as they
 * are. A routing answer is a few hundred bytes, which a LAN carries as fast compressed or not
 * (and a WAN too: under TCP's first window of about 14 KB, it is one round trip either way),
 * while decoding one costs the gateway 50-63 us of CPU (about half of what a whole query costs)
 * and compressing it costs the backend as much again (docs/rest-contract.md, Compressed answers).
 * A route whose answers are large and come over a slow link asks for DECODABLE in its headers.
 * Whatever was asked, an answer that comes compressed is decoded.
 */
const ACCEPT_ENCODING = 'identity';

/** The codings this gateway decodes, as an Accept-Encoding value. */
const DECODABLE = 'gzip, deflate, br';

/**
 * A Content-Encoding header value -> the one coding to undo ('gzip', 'deflate', 'br'), null for
 * none (identity), or an Error for what this gateway cannot decode (an unknown coding, or two
 * stacked, which no server sends unasked).
 */
function codingOf(header) {
  const codings = String(header).split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0) return null;
  if (codings.length === 1 && Object.hasOwn(DECODERS, codings[0])) return codings[0];
  return undecodable(header);
}

/** What an answer in a coding the gateway does not decode fails with (it has no code: its words are the detail). */
const undecodable = (header) => new Error(`the backend answered with Content-Encoding "${String(header).slice(0, 40)}", which the gateway does not decode`);

const DECODERS = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  // "deflate" is the zlib format (RFC 9110 section 8.4.1.2), but some servers send raw deflate:
  // the first byte tells (a zlib header's low nibble is 8, the deflate method).
  deflate: (first) => ((first & 0x0f) === 0x08 ? zlib.createInflate() : zlib.createInflateRaw()),
  br: () => zlib.createBrotliDecompress(),
};

/**
 * One answer's decoding: write() each chunk as it arrives, end() after the last; done(err,
 * buffer) is called once, with the decoded body or an Error (a zlib error with its Z_ code, or
 * one with undici's size-limit code past maxBytes). destroy() gives up (the request failed).
 */
class Decoding {
  constructor(coding, maxBytes, done) {
    this.coding = coding;
    this.maxBytes = maxBytes;
    this.done = done;
    this.stream = null; // made at the first byte: an empty body (HEAD, 204) is empty, not a zlib error
    this.chunks = [];
    this.bytes = 0;
    this.settled = false;
  }

  write(chunk) {
    if (this.settled) return;
    if (this.stream === null) this.start(chunk[0]);
    this.stream.write(chunk);
  }

  end() {
    if (this.settled) return;
    if (this.stream === null) this.finish(null, Buffer.alloc(0));
    else this.stream.end();
  }

  destroy() {
    this.settled = true;
    if (this.stream !== null) this.stream.destroy();
  }

  start(first) {
    const stream = DECODERS[this.coding](first);
    this.stream = stream;
    stream.on('data', (chunk) => {
      if (this.settled) return;
      this.bytes += chunk.length;
      if (this.bytes > this.maxBytes) {
        const err = new Error(`the decoded answer is over ${this.maxBytes} bytes (backend.maxResponseBytes)`);
        err.code = 'UND_ERR_RES_EXCEEDED_MAX_SIZE'; // undici's code for the same limit on the bytes as sent: one classification reads both
        this.finish(err);
        stream.destroy();
        return;
      }
      this.chunks.push(chunk);
    });
    stream.on('end', () => this.finish(null, this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks)));
    stream.on('error', (err) => this.finish(err));
  }

  finish(err, buffer) {
    if (this.settled) return;
    this.settled = true;
    this.chunks = [];
    this.done(err, buffer);
  }
}

/**
 * An answer's bytes as the text every engine hands over: UTF-8, without a leading byte order mark.
 * RFC 8259 section 8.1 lets a JSON parser ignore one, and some servers (.NET's, by default) send
 * it; axios used to strip it and undici not, so one API's answers were bad_json on one engine only.
 */
function textOf(buffer) {
  const text = buffer.toString();
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

module.exports = { ACCEPT_ENCODING, DECODABLE, codingOf, Decoding, textOf };
