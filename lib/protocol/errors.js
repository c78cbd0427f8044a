'use strict';

// The codec's errors, as its public surface names them; they are defined with every other code
// and class of the product in lib/errors.js.

const {
  ProtocolError, EncodeError, ERROR_CODES, ENCODE_ERROR_CODES,
} = require('../errors');

module.exports = {
  ProtocolError, EncodeError, ERROR_CODES, ENCODE_ERROR_CODES,
};
