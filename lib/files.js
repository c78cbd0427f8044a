'use strict';

// Files an operator names (a config file, a key file, certificates): read whole, but only when
// they are regular files of a sane size. `--config /dev/zero` or `--des-key-file /dev/urandom`
// otherwise read forever and grew the process to gigabytes.

const fs = require('node:fs');
const { OperatorError } = require('./errors');

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
    // The size can change between fstat and read: read one byte more than allowed to know.
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    for (;;) {
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
 * JSON.parse with an error an operator can act on: "line 3, column 7: Unexpected number"
 * instead of a character position.
 */
function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    const m = /^(.*?) in JSON at position (\d+)/.exec(err.message);
    if (m === null) throw new OperatorError(`${what} is not valid JSON: ${err.message}`);
    const before = text.slice(0, Number(m[2]));
    const line = before.split('\n').length;
    const column = Number(m[2]) - before.lastIndexOf('\n');
    throw new OperatorError(`${what} is not valid JSON: line ${line}, column ${column}: ${m[1]}`);
  }
}

module.exports = { readRegularFile, parseJson };
