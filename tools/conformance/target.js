'use strict';

const { UsageError } = require('../../lib/errors');

/** 'HOST:PORT' or '[IPv6]:PORT' -> {host, port}; a UsageError names what is wrong. */
function parseTarget(text) {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(String(text).trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) throw new UsageError(`--target must be HOST:PORT (a port from 1 to 65535), got '${text}'`);
  return { host: m[1] || m[2], port };
}

module.exports = { parseTarget };
