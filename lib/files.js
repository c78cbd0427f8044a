'use strict';

// Files an operator names (a config file, a key file, certificates): read whole, but only when
// they are regular files of a sane size. `--config /dev/zero` or `--des-key-file /dev/urandom`
// otherwise read forever and grew the process to gigabytes.

const fs = require('node:fs');
const { StringDecoder } = require('node:string_decoder');
const { OperatorError } = require('./errors');
const { jsonSyntaxFault } = require('./json-syntax');

const PIECE_BYTES = 64 * 1024;

/** The bytes of `file`, or an OperatorError naming `what` (e.g. "config: des.keyFile"). */
function readRegularFile(file, { maxBytes, what }) {
  let fd;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    throw new OperatorError(`${what}: cannot read ${file}: ${err.code || err.message}`);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new OperatorError(`${what}: ${file} is not a regular file`);
    if (st.size > maxBytes) throw new OperatorError(`${what}: ${file} is ${st.size} bytes; at most ${maxBytes} are read`);
    // Sized by the file, not by the limit: a buffer of the limit (4 MB for a config file) came
    // from mmap, and freeing it raised glibc's mmap threshold (M_MMAP_THRESHOLD is dynamic) for the
    // life of the process, so that V8's threads kept 4 MB more in their malloc arenas
    // (docs/performance.md, "Memory"). The size can change between fstat and read: one byte more
    // than the file to see it grew, and room made as it does, up to one byte past the limit.
    let buf = Buffer.alloc(st.size + 1); // st.size is within maxBytes here
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        const bigger = Buffer.alloc(Math.min(buf.length * 2, maxBytes + 1));
        buf.copy(bigger, 0, 0, n);
        buf = bigger;
      }
      const got = fs.readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n > maxBytes) throw new OperatorError(`${what}: ${file} is over ${maxBytes} bytes`);
    }
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * JSON.parse with an error an operator can act on and may paste anywhere: "line 3, column 17
 * (key backend.auth.password): a value was expected here ...". Never V8's own message, which quotes
 * the text around the fault (a secret that lost its quotes, say) into the log and /status.
 */
function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    const fault = jsonSyntaxFault(text);
    if (fault === null) throw new OperatorError(`${what} is not valid JSON`); // V8 and the scanner disagree: say no more
    const where = fault.key === null ? '' : ` (key ${fault.key})`;
    throw new OperatorError(`${what} is not valid JSON: line ${fault.line}, column ${fault.column}${where}: ${fault.problem}`);
  }
}

/**
 * The UTF-8 text of a file of our own, read 64 KB at a time, for a file past glibc's mmap
 * threshold (128 KB) read at a start: a buffer of its size would come from mmap, and freeing it
 * raises that threshold for the life of the process (readRegularFile above says what it costs).
 */
function readTextInPieces(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const piece = Buffer.alloc(PIECE_BYTES);
    const decoder = new StringDecoder('utf8');
    let text = '';
    for (let n = fs.readSync(fd, piece, 0, PIECE_BYTES, null); n > 0; n = fs.readSync(fd, piece, 0, PIECE_BYTES, null)) {
      text += decoder.write(piece.subarray(0, n));
    }
    return text + decoder.end();
  } finally {
    fs.closeSync(fd);
  }
}

module.exports = { readRegularFile, readTextInPieces, parseJson };
