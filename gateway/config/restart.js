'use strict';

// Which settings a reload (SIGHUP) cannot apply to a running gateway: its listener's address,
// its processes, its admin port, the wire numbering its sessions opened with, the V8 heap, the
// decision log (its file is opened by every process at its start). The one
// place that says so, for a single process (server.js) and for a cluster's primary (ops/cluster.js).
// TLS is applied (its files are read again and new connections get them); only turning TLS on or
// off, or client certificates (tls.ca) on or off, needs a restart: the listener is made one way or
// the other. The log's level, console and file are applied too.

const RESTART_KEYS = Object.freeze(['host', 'port', 'workers', 'admin', 'protocol', 'memory', 'decisions']);

const differs = (a, b) => JSON.stringify(a) !== JSON.stringify(b);

/** The settings of `next` that a gateway running `running` applies only after a restart, by key. */
function restartNeeded(running, next) {
  const keys = RESTART_KEYS.filter((k) => differs(running[k], next[k]));
  if ((running.tls.cert === null) !== (next.tls.cert === null) || (running.tls.ca === null) !== (next.tls.ca === null)) keys.push('tls');
  return keys;
}

/**
 * The reload's restart diff, applied: the settings of `next` that need a restart take the values of
 * `running`, in place (a compiled configuration keeps its compiled parts). Returns their keys. A
 * single process (server.js) and a cluster's primary (ops/cluster.js) both reload through it.
 */
function holdRestartSettings(running, next) {
  const keys = restartNeeded(running, next);
  for (const k of keys) next[k] = running[k];
  return keys;
}

module.exports = { restartNeeded, holdRestartSettings };
