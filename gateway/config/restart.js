'use strict';

// Which settings a reload (SIGHUP) cannot apply to a running gateway: its listener's address,
// its processes, its admin port, the wire numbering its sessions opened with, the V8 heap. The one
// place that says so, for a single process (server.js) and for a cluster's primary (ops/cluster.js).
// TLS is applied (its files are read again and new connections get them); only turning TLS on or
// off, or client certificates (tls.ca) on or off, needs a restart: the listener is made one way or
// the other. The log's level, console and file are applied too.

const RESTART_KEYS = Object.freeze(['host', 'port', 'workers', 'admin', 'protocol', 'memory']);

const differs = (a, b) => JSON.stringify(a) !== JSON.stringify(b);

/** The settings of `next` that a gateway running `running` applies only after a restart, by key. */
function restartNeeded(running, next) {
  const keys = RESTART_KEYS.filter((k) => differs(running[k], next[k]));
  if ((running.tls.cert === null) !== (next.tls.cert === null) || (running.tls.ca === null) !== (next.tls.ca === null)) keys.push('tls');
  return keys;
}

/**
 * next as a running gateway takes it: what needs a restart keeps the running value (a listener
 * made for plain TCP stays plain, whatever the files say now). Returns a shallow copy.
 */
function asRunning(running, next, keys = restartNeeded(running, next)) {
  const out = { ...next };
  for (const k of keys) out[k] = running[k];
  return out;
}

module.exports = { RESTART_KEYS, restartNeeded, asRunning };
