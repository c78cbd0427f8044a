'use strict';

// What went over one connection, byte for byte, as a vendor needs it to act on a finding: every
// TCP write the kit made and every read it got, cut at frame boundaries, so a row is one piece of
// one frame within one write (the split cases are about exactly those boundaries), with its time,
// its bytes in hex and, on the row that completes a frame, the frame decoded. A failure marks the
// rows of the frames it is about and the report shows only the rows around them.

const { HEADER_LENGTH } = require('../../lib/protocol');

/** Rows kept per connection: a 1000-query case is kept whole; a runaway host cannot fill memory. */
const MAX_ROWS = 20_000;
/** Bytes of hex shown in one row; a coalesced write of a hundred frames is a hundred rows already. */
const HEX_BYTES = 64;
/** Rows shown before and after each marked row. */
const CONTEXT_ROWS = 2;

/** Cuts one direction's stream into frames as they arrive, whatever the write boundaries. */
class Segmenter {
  constructor() {
    this.header = Buffer.alloc(HEADER_LENGTH);
    this.headerHave = 0;
    this.bodyLength = 0;
    this.bodyHave = 0;
    this.frameParts = [];
    this.frameIndex = 0;
  }

  /** The pieces of chunk: [{bytes, frameIndex, offset, frameLength, done, frame (the whole frame when done)}]. */
  push(chunk) {
    const pieces = [];
    let at = 0;
    while (at < chunk.length) {
      const start = at;
      const offset = this.headerHave + this.bodyHave;
      if (this.headerHave < HEADER_LENGTH) {
        const n = Math.min(HEADER_LENGTH - this.headerHave, chunk.length - at);
        chunk.copy(this.header, this.headerHave, at, at + n);
        this.headerHave += n;
        at += n;
        if (this.headerHave === HEADER_LENGTH) this.bodyLength = this.header.readUInt32BE(0);
      }
      if (this.headerHave === HEADER_LENGTH && at < chunk.length) {
        const n = Math.min(this.bodyLength - this.bodyHave, chunk.length - at);
        this.bodyHave += n;
        at += n;
      }
      const bytes = chunk.subarray(start, at);
      this.frameParts.push(bytes);
      const done = this.headerHave === HEADER_LENGTH && this.bodyHave === this.bodyLength;
      pieces.push({
        bytes, frameIndex: this.frameIndex, offset, frameLength: this.headerHave === HEADER_LENGTH ? HEADER_LENGTH + this.bodyLength : null, done,
      });
      if (done) {
        pieces[pieces.length - 1].frame = Buffer.concat(this.frameParts); // a copy: the chunk may be reused
        this.frameParts = [];
        this.headerHave = 0;
        this.bodyHave = 0;
        this.frameIndex++;
      }
      if (this.frameParts.length > 0 && this.bodyLength > 1 << 20) {
        this.frameParts = []; // an absurd length: its bytes are shown in the rows, never kept whole
      }
    }
    return pieces;
  }
}

const hexOf = (b) => {
  const shown = b.subarray(0, HEX_BYTES).toString('hex').replace(/(.{8})(?=.)/g, '$1 ');
  return b.length > HEX_BYTES ? `${shown} ... (${b.length} bytes)` : shown;
};

class Exchange {
  constructor() {
    this.rows = [];
    this.dropped = 0;
    this.writes = { out: 0, in: 0 };
    this.segmenters = { out: new Segmenter(), in: new Segmenter() };
  }

  /**
   * One TCP write (dir 'out') or read ('in') at ms; returns the frames it completed, each
   * {bytes, row}: the caller decodes them and hangs the decoded frame on the row (describe()).
   */
  add(dir, chunk, at) {
    const write = ++this.writes[dir];
    const done = [];
    for (const p of this.segmenters[dir].push(chunk)) {
      const row = {
        at, dir, write, frame: p.frameIndex + 1, hex: hexOf(p.bytes), bytes: p.bytes.length, part: partOf(p), text: null, marked: false,
      };
      if (this.rows.length < MAX_ROWS) this.rows.push(row);
      else this.dropped++;
      if (p.done) done.push({ bytes: p.frame, row });
    }
    return done;
  }

  /** The rows around the marked ones (all of them when there are few), with the gaps counted. */
  excerpt(maxRows = 12) {
    const { rows } = this;
    const marked = rows.map((r, i) => (r.marked ? i : -1)).filter((i) => i >= 0);
    const keep = new Set();
    if (rows.length <= maxRows) rows.forEach((_, i) => keep.add(i));
    for (let i = 0; i < Math.min(2, rows.length); i++) keep.add(i); // how the connection began: OPEN_REQ and its reply
    for (const m of marked) for (let i = Math.max(0, m - CONTEXT_ROWS); i <= Math.min(rows.length - 1, m + CONTEXT_ROWS); i++) keep.add(i);
    if (marked.length === 0) for (let i = Math.max(0, rows.length - maxRows + 2); i < rows.length; i++) keep.add(i);
    const out = [];
    let last = -1;
    for (const i of [...keep].sort((a, b) => a - b)) {
      if (i > last + 1) out.push({ skipped: i - last - 1 });
      out.push(rows[i]);
      last = i;
    }
    if (last < rows.length - 1) out.push({ skipped: rows.length - 1 - last });
    if (this.dropped > 0) out.push({ skipped: this.dropped, unrecorded: true });
    return out;
  }
}

/** "whole", or which bytes of the frame this row holds when a write split it. */
function partOf(p) {
  const whole = p.offset === 0 && p.done;
  if (whole) return 'whole';
  const of = p.frameLength === null ? 'of a frame whose header is not complete' : `of ${p.frameLength}`;
  return `bytes ${p.offset}-${p.offset + p.bytes.length - 1} ${of}`;
}

/** One row as a line of text: for the console and JUnit. */
function rowLine(r, connection) {
  if (r.skipped !== undefined) return `      ... ${r.skipped} rows ${r.unrecorded ? 'not recorded' : 'not shown'}`;
  const arrow = r.dir === 'out' ? 'router->host' : 'host->router';
  const where = `${r.dir === 'out' ? 'write' : 'read'} ${r.write}`;
  const head = `${r.marked ? '>>' : '  '} ${String(r.at.toFixed(1)).padStart(8)} ms ${connection} ${arrow} ${where}`;
  const part = r.part === 'whole' ? '' : ` [${r.part}]`;
  return `${head}${part}: ${r.hex}${r.text ? `\n${' '.repeat(15)}= ${r.text}` : ''}`;
}

module.exports = {
  Exchange, Segmenter, rowLine, hexOf,
};
