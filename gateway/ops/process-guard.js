'use strict';

// What the process does with an error nothing caught [decision, docs/reliability.md]:
//   - one that escaped a handler module (backend/user-code.js tells whose): logged with the
//     route's name, counted per route, and the process goes on. The user's code is not ours to
//     judge; the other sessions and the queries in flight must not pay for it.
//   - an unhandled rejection of our own: logged with its stack (a bug to report), and the process
//     goes on: a rejected promise leaves no function half-run, and an exit would drop every
//     router session for one promise nobody listened to.
//   - an uncaught exception of our own: logged with its stack, and the process exits 1, as Node
//     would. A throw in the middle of our synchronous code may have left a session or a pool
//     half-updated; a fresh process (systemd's Restart=on-failure, the cluster primary's restart)
//     is safer than one that answers from a broken state.

const { callOf } = require('../backend/user-code');
const { messageOf } = require('../../lib/errors');
const { LogThrottle } = require('../log-throttle');

/** How long an exiting process waits for its log line to be written. */
const EXIT_FLUSH_MS = 1000;

/** Installs the process's handlers (once, where a gateway process starts); exit: process.exit in production. */
function guardProcess(log, { exit = (code) => process.exit(code) } = {}) {
  const throttle = new LogThrottle();
  let exiting = false;
  process.on('unhandledRejection', (reason) => {
    const call = callOf(reason);
    if (call !== null) {
      call.scope.faults.escaped(call, reason, 'unhandled_rejection');
      return;
    }
    const n = throttle.hit('rejection');
    if (n) log.error(`internal error (please report it): a promise rejected with no handler: ${stackOf(reason)}; the gateway goes on`, { count: n });
  });
  process.on('uncaughtException', (err) => {
    const call = callOf(err);
    if (call !== null) {
      call.scope.faults.escaped(call, err, 'uncaught_exception');
      return;
    }
    if (exiting) return;
    exiting = true;
    log.error(`internal error (please report it): uncaught exception: ${stackOf(err)}; exiting, to be started afresh`);
    // The log line first (a file transport writes asynchronously), then the exit.
    const timer = setTimeout(() => exit(1), EXIT_FLUSH_MS);
    log.once('finish', () => {
      clearTimeout(timer);
      exit(1);
    });
    log.end();
  });
}

function stackOf(err) {
  try {
    return err instanceof Error && typeof err.stack === 'string' ? err.stack : messageOf(err);
  } catch {
    return messageOf(err);
  }
}

module.exports = { guardProcess };
