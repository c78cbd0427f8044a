'use strict';

// A router's heartbeats on one connection (docs/protocol.md, session and timing): HEARTBEAT_REQ
// once the link has been idle for HeartbeatInterval, a miss when its answer takes longer than
// HeartbeatTimeout (then a retry after HeartbeatRetry), and the counting of consecutive misses
// that HeartbeatLimit turns into a drop. Query timeouts count as misses too (the connection calls
// miss()). ping() is a heartbeat on demand, for the speed suite.

const { performance } = require('node:perf_hooks');

class Heartbeats {
  /** conn: the RouterConnection (write, invokeId, stats, settings, lastTx, lastRx); onLimit(reason): drop the connection. */
  constructor(conn, onLimit) {
    this.conn = conn;
    this.onLimit = onLimit;
    this.current = null; // {invokeId, sentAt}: the heartbeat waiting for its answer
    this.late = new Set(); // heartbeats past HeartbeatTimeout whose answer may still come
    this.pings = new Map(); // invokeId -> {sentAt, resolve, reject}
    this.nextAt = 0;
    this.misses = 0;
  }

  /** A session opened: start counting afresh. */
  reset() {
    this.current = null;
    this.nextAt = 0;
    this.misses = 0;
  }

  /** Anything answered in time clears the count of consecutive misses. */
  answeredInTime() {
    this.misses = 0;
  }

  miss() {
    this.misses++;
    const limit = this.conn.settings.heartbeatLimit;
    if (this.misses >= limit) this.onLimit(`HeartbeatLimit (${limit}) consecutive misses`);
  }

  /** Called every sweep while the session is open. */
  tick(now) {
    const s = this.conn.settings;
    const { stats } = this.conn;
    if (this.current !== null) {
      if (now - this.current.sentAt > s.heartbeatTimeoutMs) {
        this.late.add(this.current.invokeId);
        this.current = null;
        stats.heartbeats.missed++;
        this.nextAt = now + s.heartbeatRetryMs;
        this.miss();
      }
      return;
    }
    const idleFor = now - Math.max(this.conn.lastTx, this.conn.lastRx);
    if (now >= this.nextAt && idleFor >= s.heartbeatIntervalMs) {
      const invokeId = this.conn.invokeId();
      this.current = { invokeId, sentAt: now };
      stats.heartbeats.sent++;
      this.conn.write(this.conn.serialize.heartbeatReq(invokeId));
    }
  }

  /** One HEARTBEAT_REQ now; resolves with its round trip in ms. */
  ping() {
    const invokeId = this.conn.invokeId();
    return new Promise((resolve, reject) => {
      this.pings.set(invokeId, { sentAt: performance.now(), resolve, reject });
      this.conn.write(this.conn.serialize.heartbeatReq(invokeId));
    });
  }

  onConf(msg) {
    const ping = this.pings.get(msg.invokeId);
    if (ping) {
      this.pings.delete(msg.invokeId);
      ping.resolve(performance.now() - ping.sentAt);
      return;
    }
    if (this.current === null || msg.invokeId !== this.current.invokeId) {
      if (this.late.delete(msg.invokeId)) return; // a late answer
      this.conn.stats.violation('unexpected HEARTBEAT_CONF');
      return;
    }
    this.conn.stats.heartbeats.answered++;
    this.misses = 0;
    this.current = null;
  }

  /** The connection is gone: pings fail, and nothing is waited for. */
  closed(reason) {
    this.current = null;
    for (const p of this.pings.values()) p.reject(new Error(`connection closed: ${reason}`));
    this.pings.clear();
  }
}

module.exports = { Heartbeats };
