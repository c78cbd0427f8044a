'use strict';

// Entry point of a cluster worker: the primary passes the validated settings in the environment;
// only what cannot cross a process boundary (route modules, the allowlist filter, the DES key) is
// made again here, without validating a second time.

const { holdYoungGeneration, applyMemorySettings } = require('../../lib/heap');

holdYoungGeneration(); // before the gateway's modules load (lib/heap.js)
// The primary coordinates Ctrl-C and reloads, from the first moment: a SIGINT to the whole group
// during the start must not kill a worker half-way.
process.on('SIGINT', () => {});
process.on('SIGHUP', () => {});
process.on('SIGUSR2', () => {}); // a rolling restart is the primary's; `systemctl kill` may send it to every process
const { runWorker } = require('./cluster-worker');
const { FAILED } = require('./ipc');
const { compile } = require('../config');

const settings = JSON.parse(process.env.GED145_WORKER_CONFIG);
// What is read from the environment at compile time comes from it again: the DES key, ${NAME} in
// headers and secrets, the proxy variables (none of them is put in the JSON above).
const config = compile(settings, { baseDir: settings.baseDir, env: process.env });

applyMemorySettings(config.memory);
runWorker(config, {
  // Socket activation: a worker listening on the fd number of the primary's socket gets a share of it through node:cluster.
  listenFd: process.env.GED145_LISTEN_FD ? Number(process.env.GED145_LISTEN_FD) : null,
  generation: Number(process.env.GED145_WORKER_GENERATION || 0),
}).catch((err) => {
  // The primary says it, once, for the whole gateway (gateway/ops/cluster.js).
  process.send({ type: FAILED, message: err.message }, () => process.exit(1));
});
