'use strict';

// --des-key KEY for the commands that speak to a router or a host (the router simulator, decode,
// replay, conformance): kept apart from lib/cli-flags.js so that a command with no DES (rest-sim)
// loads nothing of the codec.

const { UsageError } = require('./errors');
const { des } = require('./protocol');

/** --des-key KEY (or GED145_DES_KEY) -> the 8-byte private key, null when neither is given. */
function desKeyFlag(values, env = process.env) {
  const text = values['des-key'] || env.GED145_DES_KEY;
  if (!text) return null;
  try {
    return des.parseKey(text);
  } catch (err) {
    throw new UsageError(`--des-key: ${err.message}`);
  }
}

module.exports = { desKeyFlag };
