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
