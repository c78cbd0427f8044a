'use strict';

// The two parts of undici the gateway uses, Pool and buildConnector, without its package index.
// The index also loads fetch, WebSocket, EventSource, the cache and mock agents and their
// dependencies, 1.2 MB of source of which the gateway runs none: about 4.5 MB of idle RSS
// (docs/performance.md). undici has no exports map, and its index requires these two
// files by the paths below, so the classes are the very ones its public entry exports.
//
// An internal path may move in any minor release, and the dependency is a caret range, so a path
// that no longer resolves, or no longer holds what the index exports under that name, falls back
// to the public entry: a fresh install never breaks, it only pays the index's memory again.
// tests/gateway/backend/engines/undici-parts.test.js fails when the installed undici no longer matches these
// paths, so that an upgrade of the lock file says so.

const PARTS = {
  Pool: 'undici/lib/dispatcher/pool',
  buildConnector: 'undici/lib/core/connect',
};

/** undici's export `name`, from its own file when `path` still holds it, else from the package index. */
function load(name, path = PARTS[name], requireFn = require) {
  try {
    const part = requireFn(path);
    if (typeof part === 'function' && part.name === name) return part;
  } catch (err) {
    if (err.code !== 'MODULE_NOT_FOUND' && err.code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw err;
  }
  return requireFn('undici')[name];
}

module.exports = { load, PARTS };
