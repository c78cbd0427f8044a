'use strict';

const { HEADER_LENGTH, DEFAULT_MAX_MESSAGE_LENGTH } = require('./constants');
const { ProtocolError, ERROR_CODES } = require('./errors');

/**
 * @typedef {object} FramerOptions
 * @property {(typeId: number, body: Buffer) => void} onFrame once per complete frame: its MessageType as on the wire, and its body
 * @property {(err: ProtocolError) => void} [onError] a frame over maxMessageLength (fatal; the framer stops). Without it, push() throws.
 * @property {number} [maxMessageLength] MessageLength above this is fatal the moment the header arrives (default 8192)
 */

/**
 * Streaming framer: feed it TCP chunks of any size, it calls onFrame(typeId, body) once per
 * complete message (docs/protocol.md section 2).
 *
 * - A frame that lies inside one chunk is handed out as a view of that chunk (no copy). Socket
 *   chunks are never reused by Node, so the view stays valid for as long as the caller keeps it.
 * - A frame that spans chunks is copied once into a buffer allocated at its exact size; that
 *   buffer belongs to the caller from then on (the framer never writes into it again).
 * - MessageLength is checked against maxMessageLength the moment the 8 header bytes are there,
 *   before any of the body is buffered; an oversized length is fatal and the framer stops.
 *
 * State is advanced before each callback, so a callback that throws leaves the framer consistent.
 *
 * pause() from inside onFrame stops the framer after that frame: the rest of the chunk (and any
 * chunk pushed while paused) is held, unread, until resume(). This is how a session enforces its
 * in-flight cap per message rather than per TCP chunk.
 */
class Framer {
  /**
   * @overload
   * @param {FramerOptions} options
   */
  /**
   * @param {FramerOptions} [options] checked: without onFrame, a TypeError
   */
  constructor({ maxMessageLength = DEFAULT_MAX_MESSAGE_LENGTH, onFrame, onError } = /** @type {FramerOptions} */ ({})) {
    if (typeof onFrame !== 'function') throw new TypeError('Framer needs an onFrame callback');
    this.maxMessageLength = maxMessageLength;
    this.onFrame = onFrame;
    /** @type {(err: ProtocolError) => void} */
    this.onError = onError || throwError;
    /** @private */
    this._header = Buffer.allocUnsafe(HEADER_LENGTH); // holds a header split across chunks
    /** @private */
    this._headerFill = 0;
    /** @private @type {Buffer | null} */
    this._body = null; // the exact-size buffer of a body split across chunks
    /** @private */
    this._bodyFill = 0;
    /** @private */
    this._typeId = 0;
    /** True once a frame was over the limit: the stream is finished and further chunks are ignored. */
    this.failed = false;
    this.frames = 0; // complete frames so far: lets a caller tell a new partial frame from an old one
    this.paused = false;
    /** @private @type {Buffer[]} */
    this._held = []; // chunks (or their unread tails) pushed while paused, oldest first
  }

  /**
   * Bytes received but not looked at yet because the framer is paused.
   * @returns {number}
   */
  get heldBytes() {
    let n = 0;
    for (const c of this._held) n += c.length;
    return n;
  }

  pause() {
    this.paused = true;
  }

  /** Goes on with the held bytes; may call onFrame (and pause again) before it returns. */
  resume() {
    this.paused = false;
    while (!this.paused && !this.failed && this._held.length > 0) this._consume(/** @type {Buffer} */ (this._held.shift()));
    if (this.failed) this._held = [];
  }

  /**
   * Bytes held between chunks of the frame now arriving: its header bytes so far, or its header and body bytes so far.
   * @returns {number}
   */
  get bufferedBytes() {
    return this._body === null ? this._headerFill : HEADER_LENGTH + this._bodyFill;
  }

  /**
   * A chunk of the TCP stream, of any size. The framer keeps views of it: do not write into it afterwards.
   * @param {Buffer} chunk
   */
  push(chunk) {
    if (this.failed) return;
    if (this.paused) {
      this._held.push(chunk);
      return;
    }
    this._consume(chunk);
  }

  /**
   * @private
   * @param {Buffer} chunk
   */
  _consume(chunk) {
    let offset = 0;
    const end = chunk.length;

    if (this._body !== null) offset = this._continueBody(chunk, 0);

    while (offset < end && !this.failed) {
      if (this.paused) {
        this._held.unshift(chunk.subarray(offset)); // before anything pushed since
        return;
      }
      if (this._headerFill > 0) {
        offset = this._continueHeader(chunk, offset);
        continue;
      }
      if (end - offset < HEADER_LENGTH) {
        chunk.copy(this._header, 0, offset, end);
        this._headerFill = end - offset;
        return;
      }
      const length = chunk.readUInt32BE(offset);
      const typeId = chunk.readUInt32BE(offset + 4);
      if (!this._checkLength(length, typeId)) return;
      const bodyStart = offset + HEADER_LENGTH;
      if (end - bodyStart >= length) {
        offset = bodyStart + length;
        this.frames++;
        this.onFrame(typeId, chunk.subarray(bodyStart, offset));
      } else {
        this._typeId = typeId;
        this._body = Buffer.allocUnsafe(length);
        this._bodyFill = 0;
        offset = this._continueBody(chunk, bodyStart);
      }
    }
  }

  /**
   * @private
   * @param {Buffer} chunk
   * @param {number} offset
   * @returns {number} where the next unread byte of chunk is
   */
  _continueHeader(chunk, offset) {
    const take = Math.min(HEADER_LENGTH - this._headerFill, chunk.length - offset);
    chunk.copy(this._header, this._headerFill, offset, offset + take);
    this._headerFill += take;
    offset += take;
    if (this._headerFill < HEADER_LENGTH) return offset;
    this._headerFill = 0;
    const length = this._header.readUInt32BE(0);
    const typeId = this._header.readUInt32BE(4);
    if (!this._checkLength(length, typeId)) return chunk.length;
    if (length === 0) {
      this.frames++;
      this.onFrame(typeId, EMPTY);
      return offset;
    }
    this._typeId = typeId;
    this._body = Buffer.allocUnsafe(length);
    this._bodyFill = 0;
    return this._continueBody(chunk, offset);
  }

  /**
   * @private
   * @param {Buffer} chunk
   * @param {number} offset
   * @returns {number} where the next unread byte of chunk is
   */
  _continueBody(chunk, offset) {
    const body = /** @type {Buffer} */ (this._body);
    const take = Math.min(body.length - this._bodyFill, chunk.length - offset);
    chunk.copy(body, this._bodyFill, offset, offset + take);
    this._bodyFill += take;
    offset += take;
    if (this._bodyFill === body.length) {
      this._body = null;
      this._bodyFill = 0;
      this.frames++;
      this.onFrame(this._typeId, body);
    }
    return offset;
  }

  /**
   * @private
   * @param {number} length
   * @param {number} typeId
   * @returns {boolean}
   */
  _checkLength(length, typeId) {
    if (length <= this.maxMessageLength) return true;
    this.failed = true;
    this._headerFill = 0;
    this.onError(new ProtocolError(ERROR_CODES.FRAME_TOO_LARGE,
      `MessageLength ${length} is over the limit of ${this.maxMessageLength} bytes`,
      { fatal: true, typeId }));
    return false;
  }
}

const EMPTY = Buffer.alloc(0);

/** @param {ProtocolError} err */
function throwError(err) {
  throw err;
}

module.exports = { Framer };
