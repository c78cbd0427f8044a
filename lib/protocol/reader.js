'use strict';

const { Framer } = require('./framer');
const { decode } = require('./parser');
const { ProtocolError } = require('./errors');
const { DIRECTION } = require('./direction');
const { HEADER_LENGTH } = require('./constants');
const { DEFAULT_PROFILE } = require('./profile');

/** @typedef {import('./messages').Message} Message */
/** @typedef {import('./direction').Direction} Direction */
/** @typedef {import('./profile').Profile} Profile */
/** @typedef {import('./parser').FieldDecrypter} FieldDecrypter */

/**
 * @typedef {object} MessageReaderOptions
 * @property {(msg: Message, size: number) => void} onMessage once per good frame; size: the frame's bytes, header included
 * @property {(err: ProtocolError) => void} onError once per bad frame; err.fatal: the stream is finished, otherwise answer it and carry on
 * @property {Direction} [direction] 'router-to-host' (default: a host reading a router) or 'host-to-router'
 * @property {number} [maxMessageLength] MessageLength above this is fatal (default 8192)
 * @property {FieldDecrypter} [cipher] des.createSessionCipher(K) on an encrypted session
 * @property {Profile} [profile] the wire numbering (default: DEFAULT_PROFILE)
 * @property {(typeId: number, body: Buffer) => void} [onFrame] a tap: every complete frame, before it is decoded
 */

/**
 * Framer + decoder: chunks in, messages out. onMessage(msg, size) once per good frame (size: the
 * frame's bytes, header included); onError(err)
 * once per bad one, where err.fatal says whether the stream is finished (the framer stops) or the
 * frame was only rejected (answer it and carry on). errors + messages = frames, always.
 */
class MessageReader {
  /**
   * direction: 'router-to-host' (a host reading a router: only router->host types are legal) or
   * 'host-to-router' (a router, or the simulator, reading a host). cipher: des.createSessionCipher
   * once an encrypted session is open (setCipher). profile: the wire numbering (profile.js; ours
   * by default).
   * @param {MessageReaderOptions} options
   */
  constructor({
    direction = DIRECTION.ROUTER_TO_HOST, maxMessageLength, onMessage, onError, cipher, onFrame, profile = DEFAULT_PROFILE,
  }) {
    this.direction = direction;
    this.profile = profile;
    this.cipher = cipher;
    this.onFrame = onFrame; // optional tap: (typeId, body) for every complete frame, before it is decoded
    this.onMessage = onMessage;
    this.onError = onError;
    this.framer = new Framer({
      maxMessageLength,
      onFrame: (typeId, body) => this._frame(typeId, body),
      onError,
    });
  }

  /**
   * A chunk of the TCP stream, of any size; do not write into it afterwards (frames are views of it).
   * @param {Buffer} chunk
   */
  push(chunk) {
    this.framer.push(chunk);
  }

  /**
   * From the next frame on, tags are decrypted with this cipher (undefined: plain again).
   * @param {FieldDecrypter | undefined} cipher
   */
  setCipher(cipher) {
    this.cipher = cipher;
  }

  /** Stop after the current message; bytes that follow are held unread until resume(). */
  pause() {
    this.framer.pause();
  }

  resume() {
    this.framer.resume();
  }

  /**
   * From now on frames are counted, not decoded: onType(type) for each, with its canonical type
   * number (a host that has closed counts the queries it can no longer answer). Bytes held while
   * paused go through at once; a frame over the size limit ends it, quietly.
   * @param {(typeId: number) => void} onType
   */
  skim(onType) {
    const { profile } = this;
    this.framer.onFrame = (typeId) => onType(profile.typeFromWire(typeId));
    this.framer.onError = skimError;
    this.framer.resume();
  }

  /** @returns {boolean} */
  get paused() {
    return this.framer.paused;
  }

  /** @returns {number} bytes held unread while paused */
  get heldBytes() {
    return this.framer.heldBytes;
  }

  /** @returns {boolean} true once a fatal error ended the stream */
  get failed() {
    return this.framer.failed;
  }

  /** @returns {number} bytes of the frame now arriving, held between chunks */
  get bufferedBytes() {
    return this.framer.bufferedBytes;
  }

  /** @returns {number} complete frames so far, good and bad */
  get frames() {
    return this.framer.frames;
  }

  /**
   * @private
   * @param {number} typeId
   * @param {Buffer} body
   */
  _frame(typeId, body) {
    if (this.onFrame !== undefined) this.onFrame(typeId, body);
    let msg;
    try {
      msg = decode(typeId, body, this.direction, this.cipher, this.profile);
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      this.onError(err);
      return;
    }
    this.onMessage(msg, body.length + HEADER_LENGTH);
  }
}

function skimError() {}

module.exports = { MessageReader };
