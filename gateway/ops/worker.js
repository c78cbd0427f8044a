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
const { runWorker, FAILED } = require('./cluster');
const { compileConfig } = require('../config');

const settings = JSON.parse(process.env.GED145_WORKER_CONFIG);
// Only the DES key comes from the environment again (it is never put in the JSON above).
const config = compileConfig(settings, { baseDir: settings.baseDir, env: { GED145_DES_KEY: process.env.GED145_DES_KEY } });

applyMemorySettings(config.memory);
runWorker(config).catch((err) => {
  // The primary says it, once, for the whole gateway (gateway/ops/cluster.js).
  process.send({ type: FAILED, message: err.message }, () => process.exit(1));
});
