'use strict';

// The router's own settings (docs/protocol.md sections 6 and 8), with the router's defaults.
// Every one can be overridden; the names are the ICM configuration names in camelCase + unit.

const { ROUTER_REQUEST_TIMEOUT_MS, MAX_TAG_DATA } = require('../lib/protocol');

const ROUTER_DEFAULTS = Object.freeze({
  versions: [2], // tried highest first; E_AG_INVALID_VERSION -> the next lower one
  // One per side, as each side has its own Application_Gateway_Connection row: a host that
  // keeps figures by ConnectInfo (the gateway's half-hour view) tells the sides apart.
  connectInfo: Object.freeze({ A: 'ged145-router-sim-A', B: 'ged145-router-sim-B' }),
  requestTimeoutMs: ROUTER_REQUEST_TIMEOUT_MS,
  // LateTimeout, for the half-hour figures only (LatesToHalf). The gateway's routerLateTimeoutMs
  // has the same default, so that the two count the same lates when neither is set.
  lateTimeoutMs: 100,
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

const SIDES = Object.freeze(['A', 'B']);

/**
 * ConnectInfo per side from a setting: one text for every side, or {A, B} (a side not named
 * keeps its default).
 */
function connectInfoBySide(v) {
  if (typeof v === 'string') return connectInfoBySide({ A: v, B: v });
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new RangeError('connectInfo must be a text or {A, B}');
  const out = { ...ROUTER_DEFAULTS.connectInfo };
  for (const [side, text] of Object.entries(v)) {
    if (!SIDES.includes(side)) throw new RangeError(`connectInfo: unknown side '${side}' (A or B)`);
    out[side] = text;
  }
  for (const [side, text] of Object.entries(out)) {
    // Sent NUL-terminated in one tag (latin1): checked here, not when the first connection opens.
    if (typeof text !== 'string' || text.length > MAX_TAG_DATA - 1) {
      throw new RangeError(`connectInfo of side ${side} must be a text of at most ${MAX_TAG_DATA - 1} characters`);
    }
  }
  return Object.freeze(out);
}

function routerSettings(overrides = {}) {
  const out = { ...ROUTER_DEFAULTS };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) continue;
    if (!Object.hasOwn(ROUTER_DEFAULTS, k)) throw new RangeError(`unknown router setting '${k}'`);
    out[k] = v;
  }
  out.connectInfo = connectInfoBySide(out.connectInfo);
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
