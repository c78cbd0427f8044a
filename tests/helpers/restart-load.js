'use strict';

// A restart measured under load: the router simulator on one side at 200 queries/s
// for 9 s, restart() called 1.5 s in; the router's figures, with those an assertion message shows.

const { Router } = require('../../simulator/router');

async function restartUnderLoad(port, templates, restart) {
  const router = new Router({ targets: [{ host: '127.0.0.1', port }], seed: 3, templates });
  await router.start();
  const load = router.runOpenLoop({ rate: 200, durationMs: 9000 });
  await new Promise((r) => setTimeout(r, 1500));
  await restart();
  await load;
  const s = await router.stop();
  const scheduled = s.sent + s.unsent;
  const figures = JSON.stringify({
    scheduled, sent: s.sent, unsent: s.unsent, ok: s.ok, late: s.late, lost: s.lost, timeout: s.timeout,
    reconnects: s.reconnects, failures: s.failures, closes: s.closes,
  });
  return { s, scheduled, figures };
}

/**
 * The queries a gateway's logs say came after it had closed a session (queriesAfterClose on each
 * "router disconnected" line): the router sent them before it saw our FIN; TCP cannot answer them.
 */
function queriesAfterClose(logText) {
  let n = 0;
  for (const m of logText.matchAll(/router disconnected.* queriesAfterClose=(\d+)/g)) n += Number(m[1]);
  return n;
}

module.exports = { restartUnderLoad, queriesAfterClose };
