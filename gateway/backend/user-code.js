'use strict';

// A handler module is the user's code in the gateway's process. What it returns, throws or rejects
// while its query is answered is that query's outcome (backend.js callModule); what escapes it
// later (a promise it did not await, a throw in its own timer, an 'error' event nobody listens to)
// reaches the process as an unhandledRejection or uncaughtException (gateway/ops/process-guard.js).
// Such an error is the route's, not the gateway's: it is logged with the route's name, counted per
// route, shown on /status, and costs nothing else.
//
// Which route an escaped error belongs to: each handler call runs inside an AsyncLocalStorage
// (runAs), so whatever it starts carries the call with it; an error that gateway code hands to a
// handler (ctx.request's rejection) is marked with the call too; last, a handler's file in the
// error's stack names the route (a queueMicrotask callback runs outside the call's context).
//
// Cost [decision, docs/reliability.md]: the storage is made at the first handler call, so a
// gateway whose routes run no user code never turns on async hooks. On Node 20 the first run()
// turns on V8's promise hooks for every promise of the process (bench/containment.js).

const { AsyncLocalStorage } = require('node:async_hooks');
const { LogThrottle } = require('../log-throttle');
const { channels, publishFailure } = require('./diagnostics');
const { SILENT_LOG } = require('./silent-log');
const { messageOf } = require('../../lib/errors');
const { hideCallerData } = require('../../lib/redact');
const { text: { printable } } = require('../../lib/protocol');

let storage = null;
const kCall = Symbol('ged145.handlerCall');
/** file -> the open scopes whose route runs it, the latest last: the stack's fallback. */
const byFile = new Map();

/**
 * A module route as its escaped errors are attributed: subtype and files, the faults object of
 * the gateway that runs it, and log.redact. One per route per backend (a reload makes new ones).
 */
function handlerScope(subtype, route, faults, redact = false) {
  const scope = {
    subtype, file: route.file, files: route.files || [route.file], faults, redact,
  };
  for (const f of scope.files) {
    if (!byFile.has(f)) byFile.set(f, []);
    byFile.get(f).push(scope);
  }
  return scope;
}

/** A scope whose backend closed (a reload's old one, the warm-up's): no longer named by its files. */
function dropScope(scope) {
  for (const f of scope.files) {
    const list = byFile.get(f) || [];
    const i = list.indexOf(scope);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) byFile.delete(f);
  }
}

/** fn(...args) as one call of scope's handler for query (the JSON form the handler gets). */
function runAs(scope, query, fn, ...args) {
  if (storage === null) storage = new AsyncLocalStorage();
  return storage.run({ scope, query }, fn, ...args);
}

/** The call whose code is running now, or undefined. */
function currentCall() {
  return storage === null ? undefined : storage.getStore();
}

/** err, marked as handed to the handler call that is running (ctx.request's rejections). */
function markError(err, call) {
  if (call !== undefined && err !== null && typeof err === 'object') {
    Object.defineProperty(err, kCall, { value: call, enumerable: false, configurable: true });
  }
  return err;
}

/** The handler call an escaped error came from ({scope, query}), or null: not a handler's. */
function callOf(err) {
  const running = currentCall();
  if (running !== undefined) return running;
  try {
    if (err === null || typeof err !== 'object') return null;
    if (err[kCall] !== undefined) return err[kCall];
    const { stack } = err;
    if (typeof stack === 'string') for (const [file, list] of byFile) if (stack.includes(file)) return { scope: list.at(-1), query: null };
  } catch {
    // a hostile error object (a getter that throws): not attributable
  }
  return null;
}

/** Log lines per route: the first 10, then one every 1000, with the count. */
const LOG_FIRST = 10;
const LOG_EVERY = 1000;
const BAD_ANSWER = Object.freeze({ reason: 'bad_answer' });

/**
 * A gateway's record of what its handler modules did wrong, per route; it outlives reloads, so a
 * handler whose errors keep coming shows its count on /status however often it was reloaded.
 * log: where they are told (SILENT_LOG where none is wanted); owner: what its diagnostics messages
 * carry as `gateway` (diagnostics.js).
 */
class HandlerFaults {
  constructor({ log = SILENT_LOG, owner = null } = {}) {
    this.log = log;
    this.owner = owner;
    this.throttle = new LogThrottle(LOG_FIRST, LOG_EVERY);
    this.routes = new Map(); // subtype -> {module, escaped, badAnswers, lastError, lastErrorAt}
  }

  entry(scope) {
    let e = this.routes.get(scope.subtype);
    if (e === undefined) {
      e = {
        module: scope.file, escaped: 0, badAnswers: 0, lastError: null, lastErrorAt: null,
      };
      this.routes.set(scope.subtype, e);
    }
    e.module = scope.file;
    return e;
  }

  /** An error that escaped a handler call (kind: 'uncaught_exception' or 'unhandled_rejection'). */
  escaped(call, err, kind) {
    const { scope } = call;
    const text = this.text(messageOf(err), call.query, scope.redact);
    const e = this.entry(scope);
    e.escaped++;
    e.lastError = `${kind.replace('_', ' ')}: ${text}`;
    e.lastErrorAt = Date.now();
    this.publish(scope, kind, err);
    const n = this.throttle.hit(`escaped ${scope.subtype}`);
    if (n) {
      this.log.error(`handler module error escaped its query (${kind.replace('_', ' ')}): ${text}; the gateway goes on`, {
        subtype: logText(scope.subtype), module: scope.file, count: n,
      });
    }
  }

  /** A handler answered something that is not an object: its query got E_AG_HOST_ERROR1. */
  badAnswer(scope, answer, subtype, invokeId) {
    const what = describe(answer);
    const e = this.entry(scope);
    e.badAnswers++;
    e.lastError = `bad answer: ${what}, not an object`;
    e.lastErrorAt = Date.now();
    this.publish(scope, 'bad_answer', null);
    publishFailure(this.owner, null, BAD_ANSWER); // beside a REST body's bad_json
    const n = this.throttle.hit(`bad ${scope.subtype}`);
    if (n) {
      this.log.error(`handler module answered ${what}, not an object: the router gets E_AG_HOST_ERROR1`, {
        subtype: logText(subtype), module: scope.file, invokeId, count: n,
      });
    }
  }

  /** An error of a handler module, for the channel's subscribers (kind: uncaught_exception, unhandled_rejection, bad_answer). */
  publish(scope, kind, error) {
    if (channels.handlerError.hasSubscribers) {
      channels.handlerError.publish({
        gateway: this.owner, route: scope.subtype, module: scope.file, kind, error,
      });
    }
  }

  /** The handler's words, caller data hidden under log.redact (lib/redact.js), one line, bounded. */
  text(message, query, redact) {
    const t = redact ? hideCallerData(message, query) : String(message);
    return printable(t.split('\n')[0], 300);
  }

  /** For /status: per route, what went wrong and when last. */
  toJSON() {
    const out = Object.create(null);
    for (const [subtype, e] of this.routes) {
      out[subtype] = { ...e, lastErrorAt: e.lastErrorAt === null ? null : new Date(e.lastErrorAt).toISOString() };
    }
    return out;
  }
}

/** What a bad answer was, in a few words (never its content: it may be caller data). */
function describe(answer) {
  if (answer === null) return 'null';
  if (answer === undefined) return 'nothing';
  if (Array.isArray(answer)) return 'an array';
  return `a ${typeof answer}`;
}

const logText = (text) => (text === undefined ? '(none)' : printable(String(text), 64));

module.exports = {
  handlerScope, dropScope, runAs, currentCall, markError, callOf, HandlerFaults,
};
