'use strict';

const { Framer } = require('./framer');
const { decode } = require('./parser');
const { ProtocolError } = require('./errors');

/**
 * Framer + decoder: chunks in, messages out. onMessage(msg) once per good frame; onError(err)
 * once per bad one, where err.fatal says whether the stream is finished (the framer stops) or the
 * frame was only rejected (answer it and carry on). errors + messages = frames, always.
 */
class MessageReader {
  constructor({ from = 'router', maxMessageLength, onMessage, onError }) {
    this.from = from;
    this.crypt = undefined; // set once an encrypted session is open (see des.js)
    this.onMessage = onMessage;
    this.onError = onError;
    this.framer = new Framer({
      maxMessageLength,
      onFrame: (typeId, body) => this._frame(typeId, body),
      onError,
    });
  }

  push(chunk) {
    this.framer.push(chunk);
  }

  /** Stop after the current message; bytes that follow are held unread until resume(). */
  pause() {
    this.framer.pause();
  }

  resume() {
    this.framer.resume();
  }

  get paused() {
    return this.framer.paused;
  }

  get heldBytes() {
    return this.framer.heldBytes;
  }

  get failed() {
    return this.framer.failed;
  }

  get bufferedBytes() {
    return this.framer.bufferedBytes;
  }

  get frames() {
    return this.framer.frames;
  }

  _frame(typeId, body) {
    let msg;
    try {
      msg = decode(typeId, body, this.from, this.crypt);
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      this.onError(err);
      return;
    }
    this.onMessage(msg);
  }
}

module.exports = { MessageReader };
