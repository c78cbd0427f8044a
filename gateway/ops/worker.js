'use strict';

// Entry point of a cluster worker: the primary sends the validated settings and the handler
// modules' text (START, gateway/ops/ipc.js); only what cannot cross a process boundary (route
// modules, the allowlist filter, the DES key) is made again here, without validating a second time.

const { holdYoungGeneration, applyMemorySettings } = require('../../lib/heap');

holdYoungGeneration(); // before the gateway's modules load (lib/heap.js)
// The primary coordinates Ctrl-C and reloads, from the first moment: a SIGINT to the whole group
// during the start must not kill a worker half-way.
process.on('SIGINT', () => {});
process.on('SIGHUP', () => {});
process.on('SIGUSR2', () => {}); // a rolling restart is the primary's; `systemctl kill` may send it to every process
const { runWorker } = require('./cluster-worker');
const { START, FAILED } = require('./ipc');
const { compile } = require('../config');

// The primary sends the running generation first thing (START): attached before the first turn of
// the event loop, so that no message is read before there is someone to take it.
process.once('message', (msg) => {
  if (!msg || msg.type !== START) {
    process.send({ type: FAILED, message: 'the primary did not send the configuration first' }, () => process.exit(1));
    return;
  }
  let config;
  try {
    // What is read from the environment at compile time comes from it again: the DES key, ${NAME}
    // in headers and secrets, the proxy variables (none of them is in the settings sent). The
    // handler modules are compiled from the text the primary read, not from their files.
    config = compile(msg.settings, { baseDir: msg.settings.baseDir, env: process.env, sources: msg.sources });
  } catch (err) {
    process.send({ type: FAILED, message: err.message }, () => process.exit(1));
    return;
  }
  applyMemorySettings(config.memory);
  runWorker(config, {
    // Socket activation: a worker listening on the fd number of the primary's socket gets a share of it through node:cluster.
    listenFd: process.env.GED145_LISTEN_FD ? Number(process.env.GED145_LISTEN_FD) : null,
    generation: msg.generation,
  }).catch((err) => {
    // The primary says it, once, for the whole gateway (gateway/ops/cluster.js).
    process.send({ type: FAILED, message: err.message }, () => process.exit(1));
  });
});
