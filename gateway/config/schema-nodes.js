'use strict';

// The builders of the configuration schema's nodes (schema.js, schema-routes.js): an integer in
// a range, a switch, a choice, a file path, a section of settings, a command line flag.

const { MAX_UINT32 } = require('../../lib/protocol');

const int = (minimum, maximum, dflt, extra = {}) => ({
  type: 'integer', minimum, maximum, default: dflt, ...extra,
});
const bool = (dflt, extra = {}) => ({ type: 'boolean', default: dflt, ...extra });
const oneOf = (values, dflt, extra = {}) => ({ enum: values, default: dflt, ...extra });
const path = (extra = {}) => ({
  type: ['string', 'null'], minLength: 1, default: null, 'x-must': 'must be a file path or null', ...extra,
});
const section = (description, properties, extra = {}) => ({
  type: 'object', description, additionalProperties: false, properties, ...extra,
});
const flag = (name, arg, help) => ({ name, arg, help });

const intMap = (names, description) => ({
  type: 'object',
  description,
  additionalProperties: false,
  properties: Object.fromEntries(Object.entries(names).map(([k, v]) => [k, int(0, MAX_UINT32, v)])),
});

module.exports = {
  int, bool, oneOf, path, section, flag, intMap,
};
