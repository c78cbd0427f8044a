'use strict';

// The backend's warnings about an origin (a refused TLS handshake, refused credentials, a 429):
// one line per kind per WARN_EVERY_MS, the next saying how many were folded into it. A backend
// that fails does so thousands of times a second; the operator needs the first line and the count.

const WARN_EVERY_MS = 10_000;

class Warnings {
  constructor(log) {
    this.log = log;
    this.lastOf = new Map(); // kind -> {at, folded}
  }

  /** Writes message unless a line of this kind was written less than WARN_EVERY_MS ago (then it is counted). */
  warn(kind, message) {
    const now = Date.now();
    const last = this.lastOf.get(kind);
    if (last !== undefined && now - last.at < WARN_EVERY_MS) {
      last.folded++;
      return;
    }
    this.log.warn(message, last !== undefined && last.folded > 0 ? { sinceLastLine: last.folded } : {});
    this.lastOf.set(kind, { at: now, folded: 0 });
  }
}

module.exports = { Warnings };
