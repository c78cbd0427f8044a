'use strict';

// TLS handshakes in progress on the router-facing listener. A half-sent ClientHello costs its
// sender one socket and nothing else; two thousand of them held every connection slot
// (limits.maxConnections) until their deadline, and a router arriving meanwhile was dropped. So a
// handshake has a deadline of its own (limits.handshakeTimeoutMs, well under the router's 15 s
// OpenTimeout), and at most limits.maxHandshakes are in progress, limits.maxHandshakesPerAddress
// from one address. At a cap the new connection is taken and an old handshake is closed: the
// oldest of its own address at the per-address cap, else the oldest of the address holding the
// most. Refusing the new one instead would let a flood that keeps the caps full lock every
// router out; this way a flood evicts its own handshakes, and a router's, which finishes within
// a round trip or two, is closed only by a flood from more addresses than maxHandshakes.
//
// Handshakes are kept in the order they started (a Map keeps insertion order), so the oldest is
// the first and the deadline check looks only at the head: one timer for all of them.

class PendingHandshakes {
  /**
   * limits(): the limits in force now (a reload reaches the next connection);
   * onClosed(socket, why, detail): a handshake closed by us, why 'timeout' or 'evicted'.
   */
  constructor({ limits, onClosed }) {
    this.limits = limits;
    this.onClosed = onClosed;
    this.all = new Map(); // socket -> {address, deadline}, oldest first
    this.byAddress = new Map(); // address -> Set of its sockets, oldest first
    this.byCount = new Map(); // n -> Set of the addresses holding n handshakes
    this.most = 0; // the largest n above
    this.timer = null;
  }

  get size() {
    return this.all.size;
  }

  /** A TCP connection that will start a handshake; call done(socket) when it ends either way. */
  add(socket, address) {
    const { handshakeTimeoutMs, openTimeoutMs, maxHandshakes, maxHandshakesPerAddress } = this.limits();
    const mine = this.byAddress.get(address);
    if (mine !== undefined && mine.size >= maxHandshakesPerAddress) this.evict(first(mine), address);
    else if (this.all.size >= maxHandshakes) this.evictFromLargest();
    // A handshake never outlives the time a connection has to open a session.
    const deadline = Date.now() + Math.min(handshakeTimeoutMs, openTimeoutMs);
    this.all.set(socket, { address, deadline });
    this.count(address, socket, 1);
    if (this.timer === null) this.arm(deadline);
  }

  /** The handshake finished, failed, or its socket closed. */
  done(socket) {
    const entry = this.all.get(socket);
    if (entry === undefined) return;
    this.all.delete(socket);
    this.count(entry.address, socket, -1);
  }

  evictFromLargest() {
    const address = first(this.byCount.get(this.most));
    this.evict(first(this.byAddress.get(address)), address);
  }

  evict(socket, address) {
    const held = this.byAddress.get(address).size;
    this.done(socket);
    this.onClosed(socket, 'evicted', { pending: this.all.size + 1, fromAddress: held });
    socket.destroy();
  }

  /** Handshakes of address up or down by one, and the address in the right byCount set. */
  count(address, socket, delta) {
    let mine = this.byAddress.get(address);
    const before = mine === undefined ? 0 : mine.size;
    if (delta > 0) {
      if (mine === undefined) {
        mine = new Set();
        this.byAddress.set(address, mine);
      }
      mine.add(socket);
    } else {
      mine.delete(socket);
      if (mine.size === 0) this.byAddress.delete(address);
    }
    const after = before + delta;
    if (before > 0) this.byCount.get(before).delete(address);
    if (after > 0) {
      let set = this.byCount.get(after);
      if (set === undefined) {
        set = new Set();
        this.byCount.set(after, set);
      }
      set.add(address);
    }
    if (after > this.most) this.most = after;
    while (this.most > 0 && !(this.byCount.get(this.most) || EMPTY).size) this.most--;
  }

  arm(deadline) {
    this.timer = setTimeout(expire, Math.max(0, deadline - Date.now()), this);
    this.timer.unref();
  }

  /** Closes the handshakes past their deadline (the oldest first), then waits for the next one's. */
  expire() {
    this.timer = null;
    const now = Date.now();
    for (const [socket, entry] of this.all) {
      if (entry.deadline > now) {
        this.arm(entry.deadline);
        return;
      }
      this.done(socket);
      this.onClosed(socket, 'timeout', {});
      socket.destroy();
    }
  }

  close() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

const EMPTY = new Set();
const first = (set) => set.values().next().value;

function expire(pending) {
  pending.expire();
}

module.exports = { PendingHandshakes };
