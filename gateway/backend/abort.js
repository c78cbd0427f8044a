'use strict';

// The abort signal of one query in flight. An AbortController per query cost about 1.5 KB of
// allocation and a few microseconds on the path of every query (an EventTarget with its maps,
// listener records), for a signal that fires on a small share of them (docs/performance.md).
// The undici engine needs only what this has: `aborted`, `reason` and 'abort' listeners. Code that
// hands the signal on (a handler module, AbortSignal.any, axios) gets a real AbortSignal from
// asAbortSignal(), made on demand and aborted with this one.

const { DeadlineError } = require('./errors');

class QuerySignal {
  /** group: whose query it is (a session's id): the engine shares connections out fairly between groups. */
  constructor(group) {
    this.group = group;
    this.aborted = false;
    this.reason = undefined;
    this.listeners = null; // functions, or objects with handleEvent, as EventTarget takes them
    this.controller = null; // behind toAbortSignal()
  }

  /** EventTarget's subset for 'abort'; options such as {once} change nothing, it fires once. */
  addEventListener(type, listener) {
    if (type !== 'abort' || listener === null || listener === undefined) return;
    if (this.listeners === null) this.listeners = [];
    if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(type, listener) {
    if (type !== 'abort' || this.listeners === null) return;
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  /** Fires once; a reason left out is an AbortError, as with AbortController. */
  abort(reason = new DOMException('This operation was aborted', 'AbortError')) {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    if (this.controller !== null) this.controller.abort(reason);
    if (this.listeners === null) return;
    const event = { type: 'abort', target: this };
    for (const listener of this.listeners.splice(0)) {
      if (typeof listener === 'function') listener.call(this, event);
      else listener.handleEvent(event);
    }
  }

  /** A real AbortSignal that follows this one. */
  toAbortSignal() {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}

/**
 * The reasons a query's request is aborted with when its deadline passed (handle.js): the
 * origin's failure, or, DEADLINE_LATE, no evidence against it (backend/errors.js, DeadlineError).
 */
const DEADLINE = Object.freeze(new DeadlineError(false));
const DEADLINE_LATE = Object.freeze(new DeadlineError(true));

/** The AbortSignal to hand on to code that expects one (undefined stays undefined). */
const asAbortSignal = (signal) => (signal instanceof QuerySignal ? signal.toAbortSignal() : signal);

module.exports = {
  QuerySignal, asAbortSignal, DEADLINE, DEADLINE_LATE,
};
