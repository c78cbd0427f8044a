'use strict';

// The router's own settings (docs/protocol.md sections 6 and 8), with the router's defaults.
// Every one can be overridden; the names are the ICM configuration names in camelCase + unit.

const { ROUTER_REQUEST_TIMEOUT_MS } = require('../lib/protocol');

const ROUTER_DEFAULTS = Object.freeze({
  versions: [2], // tried highest first; E_AG_INVALID_VERSION -> the next lower one
  connectInfo: 'ged145-router-sim',
  requestTimeoutMs: ROUTER_REQUEST_TIMEOUT_MS,
  lateTimeoutMs: 500, // informational: replies after requestTimeoutMs are counted late
  errorThreshold: 0, // consecutive errors that force a reconnect; 0 = off
  heartbeatIntervalMs: 15_000,
  heartbeatTimeoutMs: 300,
  heartbeatRetryMs: 1_000, // wait after a missed heartbeat before the next one
  heartbeatLimit: 10,
  openTimeoutMs: 15_000,
  sessionRetryMs: 30_000,
  sessionRetryLimit: 0, // reconnect attempts after a failure; 0 = unlimited
});

const MODES = Object.freeze(['none', 'duplicate', 'alternate', 'hot-standby']);

function routerSettings(overrides = {}) {
  const out = { ...ROUTER_DEFAULTS };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) continue;
    if (!Object.hasOwn(ROUTER_DEFAULTS, k)) throw new RangeError(`unknown router setting '${k}'`);
    out[k] = v;
  }
  for (const [k, v] of Object.entries(out)) {
    if (k === 'versions') {
      if (!Array.isArray(v) || v.length === 0 || !v.every((x) => Number.isInteger(x) && x >= 0)) throw new RangeError('versions must be a list of integers');
    } else if (k !== 'connectInfo' && (!Number.isInteger(v) || v < 0)) {
      throw new RangeError(`${k} must be a non-negative integer`);
    }
  }
  out.versions = [...out.versions].sort((a, b) => b - a);
  return out;
}

module.exports = { ROUTER_DEFAULTS, MODES, routerSettings };
