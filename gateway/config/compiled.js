'use strict';

// The compiled configuration: the validated settings (every key of the schema, with its default
// filled in) and what was made of them once, at load, as named fields a reader sees in a debugger:
// the routes compiled (compiledRoutes), the availability settings complete (availability), what
// the backend needs from outside the file (backendRuntime), the listener's TLS files
// (listenerTls), the allowlist as a filter (allowlistFilter) and the DES key (desKey).
//
// Secrets stay out of every dump: a key's bytes, a header's value, a proxy's password print as
// [redacted] through util.inspect (console.log, the debugger's REPL) and JSON.stringify
// (secrets.js). The JSON of a compiled configuration is the settings it was compiled from (what a
// cluster worker is handed, and compiles again in its own process), never what was compiled.

const { SETTING_KEYS } = require('./schema');
const { redactedBytes } = require('./secrets');

class CompiledConfig {
  /**
   * settings: validated, defaults filled in (only the schema's keys are taken); parts: what compile()
   * made of them; baseDir: where relative paths of the file are; configFile: its absolute path, or null.
   */
  constructor(settings, parts, { baseDir, configFile = null }) {
    for (const key of SETTING_KEYS) this[key] = settings[key];
    this.baseDir = baseDir;
    this.configFile = configFile;
    this.compiledRoutes = parts.compiledRoutes; // subtype -> compiled route; a Map, so "__proto__" is a subtype like any other
    this.compiledCandidates = parts.compiledCandidates || new Map(); // name -> compiled candidate (routes.js compileCandidate)
    this.availability = parts.availability; // {fallback, cache, breaker, retry, hedge, cacheScope}, always complete
    this.backendRuntime = parts.backendRuntime; // {tls, proxy, auth, headers}
    this.listenerTls = parts.listenerTls; // {cert, key, ca} for tls.createServer, or null for plain TCP
    this.allowlistFilter = parts.allowlistFilter; // {allows(address)}, or null: any address
    this.desKey = redactedBytes(parts.desKey); // Buffer, or null
  }

  /** The settings this was compiled from, as plain JSON (a cluster worker compiles them again). */
  toJSON() {
    const out = {};
    for (const key of SETTING_KEYS) out[key] = this[key];
    out.baseDir = this.baseDir;
    out.configFile = this.configFile;
    return out;
  }
}

module.exports = { CompiledConfig };
