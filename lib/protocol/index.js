'use strict';

// The public surface of the GED-145 codec. No sockets and no timers in this package.

const constants = require('./constants');
const {
  ProtocolError, EncodeError, ProfileError, ERROR_CODES, ENCODE_ERROR_CODES, PROFILE_ERROR_CODES,
} = require('./errors');
const { Framer } = require('./framer');
const { decode, decodeFrame, fixedLength } = require('./parser');
const { encode, serialize, serializerFor } = require('./serializer');
const { MessageReader } = require('./reader');
const messages = require('./messages');
const des = require('./des');
const text = require('./text');
const { DIRECTION } = require('./direction');
const { createProfile, resolveProfile, DEFAULT_PROFILE } = require('./profile');

// The types an integrator names (`import type { Message } from 'ged145'`), from the modules that define them.
/** @typedef {import('./messages').Message} Message */
/** @typedef {import('./messages').Vars} Vars */
/** @typedef {import('./messages').Ecc} Ecc */
/** @typedef {import('./messages').EccArrayElement} EccArrayElement */
/** @typedef {import('./messages').UnknownTag} UnknownTag */
/** @typedef {import('./messages').InvokeOnlyType} InvokeOnlyType */
/** @typedef {import('./constants').MessageTypeName} MessageTypeName */
/** @typedef {import('./constants').StatusName} StatusName */
/** @typedef {import('./direction').Direction} Direction */
/** @typedef {import('./errors').ProtocolErrorCode} ProtocolErrorCode */
/** @typedef {import('./errors').EncodeErrorCode} EncodeErrorCode */
/** @typedef {import('./errors').ProfileErrorCode} ProfileErrorCode */
/** @typedef {import('./framer').FramerOptions} FramerOptions */
/** @typedef {import('./reader').MessageReaderOptions} MessageReaderOptions */
/** @typedef {import('./messages').EncodableMessage} EncodableMessage */
/** @typedef {import('./serializer').Serializer} Serializer */
/** @typedef {import('./serializer').TagOptions} TagOptions */
/** @typedef {import('./messages').Status} Status */
/** @typedef {import('./des').SessionCipher} SessionCipher */
/** @typedef {import('./profile').Profile} Profile */
/** @typedef {import('./profile').ProfileSpec} ProfileSpec */

module.exports = {
  ...constants,
  ProtocolError,
  EncodeError,
  ProfileError,
  ERROR_CODES,
  ENCODE_ERROR_CODES,
  PROFILE_ERROR_CODES,
  Framer,
  MessageReader,
  decode,
  decodeFrame,
  fixedLength,
  DIRECTION,
  encode,
  serialize,
  serializerFor,
  messages,
  des,
  text,
  createProfile,
  resolveProfile,
  DEFAULT_PROFILE,
};
