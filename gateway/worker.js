'use strict';

// Entry point of a cluster worker: the primary passes the validated config in the environment.

const { runWorker } = require('./index');
const { loadConfig, OPAQUE_KEYS } = require('./config');

const raw = JSON.parse(process.env.GED145_WORKER_CONFIG);
const { baseDir } = raw;
delete raw.compiledRoutes; // recompiled here: modules and functions do not cross processes
delete raw.baseDir;
// Only the DES key comes from the environment again (it is never put in the JSON above).
const config = loadConfig({ env: { GED145_DES_KEY: process.env.GED145_DES_KEY }, overrides: flatten(raw), baseDir });

function flatten(obj, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix + k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && !OPAQUE_KEYS.has(k)) flatten(v, `${key}.`, out);
    else out[key] = v;
  }
  return out;
}

runWorker(config).catch((err) => {
  process.stderr.write(`gateway worker: ${err.message}\n`);
  process.exit(1);
});
