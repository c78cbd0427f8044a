'use strict';

// One log budget for what any host that reaches the port can cause: a connection refused by the
// allowlist, a TLS handshake that fails, a connection that never sends OPEN_REQ, an OPEN_REQ
// refused, and the info lines of a connection's life (connected, opened, CLOSE_REQ, disconnected).
// Thousands of such connections a second would otherwise write megabytes and rotate the log away.
//
// Per window (WINDOW_MS, process-wide), the first PER_SOURCE connections of each source address,
// and IN_ALL in all, are logged line by line as before ("loud"); the lines of the others are
// counted, and at the window's end one summary line per kind says how many there were and from
// where ("412 connections refused by the allowlist in the last 10 s, e.g. 10.0.0.7"). A connection
// that opens a session gets a second chance from a budget of its own, so a flood of refused
// connections cannot hide a router's session, while a flood of sessions from one address is
// summed up like the rest. Errors are never held back: they are not something a peer can cause.
//
// The lines of a connection before its session opens, and the summaries, are connection noise:
// they carry NOISE, and the status page keeps them apart from the real warnings (ops/status.js).

const NOISE = Symbol('ged145.connectionNoise');

const WINDOW_MS = 10_000;
const PER_SOURCE = 5;
const IN_ALL = 20;
const EXAMPLES = 3;
/** Distinct addresses counted per kind and window; a flood from more is "at least" this many. */
const MAX_SOURCES = 1000;

/** The kinds a summary names, by the start of the line they stand for. */
const KINDS = [
  ['connection refused: address not on the allowlist', 'allowlist', 'connections refused by the allowlist'],
  ['TLS handshake', 'tls', 'TLS handshakes failed'],
  ['no OPEN_REQ within', 'open-timeout', 'connections closed without an OPEN_REQ'],
  ['OPEN_REQ refused', 'open-refused', 'OPEN_REQs refused'],
  ['router connected', 'connected', 'connections accepted'],
  ['session opened', 'opened', 'sessions opened'],
  ['CLOSE_REQ received', 'close-req', 'CLOSE_REQs received'],
  ['router disconnected', 'closed', 'connections closed'],
];
const OTHER = ['', 'other', 'other connection lines (protocol errors, timeouts)'];

function kindOf(message) {
  for (const k of KINDS) if (message.startsWith(k[0])) return k;
  return OTHER;
}

/** How many connections (or sessions) of each address, and in all, may be logged in full this window. */
class Budget {
  constructor(perSource, inAll) {
    this.perSource = perSource;
    this.inAll = inAll;
    this.taken = 0;
    this.bySource = new Map();
  }

  take(address) {
    if (this.taken >= this.inAll) return false;
    const n = this.bySource.get(address) || 0;
    if (n >= this.perSource) return false;
    this.bySource.set(address, n + 1);
    this.taken++;
    return true;
  }

  reset() {
    this.taken = 0;
    this.bySource.clear();
  }
}

/** The lines of one kind held back this window. */
class Held {
  constructor(kind, text) {
    this.kind = kind;
    this.text = text;
    this.count = 0;
    this.level = 'info';
    this.sources = new Set();
  }

  add(level, address) {
    this.count++;
    if (level === 'warn') this.level = 'warn';
    if (this.sources.size < MAX_SOURCES) this.sources.add(address);
  }
}

class ConnectionLog {
  /** log: the process's logger; opts for tests: windowMs, perSource, inAll. */
  constructor(log, { windowMs = WINDOW_MS, perSource = PER_SOURCE, inAll = IN_ALL } = {}) {
    this.log = log;
    this.windowMs = windowMs;
    this.connections = new Budget(perSource, inAll);
    this.sessions = new Budget(perSource, inAll);
    this.held = new Map(); // kind -> Held
    this.timer = null; // the window's end: while it runs, the budgets above are this window's
  }

  /** A TCP connection from address is accepted: the logger for its lines, loud or quiet. */
  accept(address) {
    this.startWindow();
    return new ConnectionLogger(this.log, address, this.connections.take(address), {
      hold: (level, message) => this.hold(level, message, address),
      admitSession: () => this.admitSession(address),
    });
  }

  /** A session opened on a quiet connection: may its lines be written from now on? */
  admitSession(address) {
    this.startWindow();
    return this.sessions.take(address);
  }

  hold(level, message, address) {
    const [, kind, text] = kindOf(message);
    let h = this.held.get(kind);
    if (h === undefined) {
      h = new Held(kind, text);
      this.held.set(kind, h);
    }
    h.add(level, address);
  }

  startWindow() {
    if (this.timer !== null) return;
    this.timer = setTimeout(endWindow, this.windowMs, this);
    this.timer.unref();
  }

  /** The window is over: one line per kind held back, and the budgets start afresh. */
  flush() {
    this.timer = null;
    this.connections.reset();
    this.sessions.reset();
    const seconds = Math.round(this.windowMs / 1000);
    for (const h of this.held.values()) {
      const examples = [...h.sources].slice(0, EXAMPLES);
      const from = h.sources.size >= MAX_SOURCES ? `at least ${MAX_SOURCES}` : String(h.sources.size);
      this.log[h.level](`${h.count} ${h.text} in the last ${seconds} s, not logged one by one; e.g. ${examples.join(', ')}`, {
        kind: h.kind, count: h.count, addresses: from, examples, [NOISE]: true,
      });
    }
    this.held.clear();
  }

  close() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.flush();
  }
}

function endWindow(book) {
  book.flush();
}

/**
 * What a connection's code (session, link, open, the listener) logs through: a winston logger's
 * info/warn/error/debug, written or held back by the budget the connection got when accepted.
 */
class ConnectionLogger {
  /**
   * log: the process's logger; loud: whether this connection's lines are written one by one; from
   * its budget (ConnectionLog): hold(level, message), a line counted into the window's summary,
   * and admitSession(), whether a session opened on a quiet connection may be written from now on.
   */
  constructor(log, address, loud, { hold, admitSession }) {
    this.log = log;
    this.address = address;
    this.loud = loud;
    this.hold = hold;
    this.admitSession = admitSession;
    this.opened = false; // the session opened: its warnings are real ones, no longer noise
  }

  info(message, meta) {
    this.line('info', message, meta);
  }

  warn(message, meta) {
    this.line('warn', message, meta);
  }

  error(message, meta) {
    this.log.error(message, meta);
  }

  debug(message, meta) {
    if (this.loud) this.log.debug(message, meta);
  }

  isLevelEnabled(level) {
    return this.log.isLevelEnabled(level);
  }

  /** OPEN_CONF is sent: a quiet connection may be written from now on, if the session budget allows. */
  sessionOpened() {
    this.opened = true;
    if (!this.loud) this.loud = this.admitSession();
  }

  line(level, message, meta) {
    if (!this.loud) {
      this.hold(level, message);
      return;
    }
    if (this.opened) this.log[level](message, meta);
    else this.log[level](message, { ...meta, [NOISE]: true });
  }
}

module.exports = {
  ConnectionLog, NOISE, WINDOW_MS,
};
