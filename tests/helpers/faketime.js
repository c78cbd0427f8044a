'use strict';

// libfaketime (Debian package faketime; .ci/run installs it) for a gateway child whose wall
// clock is set apart from the machine's: shifted from the start (offset, "-10s"), or stepped
// while it runs (step("-3600s"), read from a file within a second). The monotonic clock is left
// alone (FAKETIME_DONT_FAKE_MONOTONIC), as a real clock step leaves it, so timers keep working.
// Preloaded directly: the faketime command sets FAKETIME itself, which would win over the file.

const fs = require('node:fs');
const path = require('node:path');
const { tmpDir } = require('./tmp');

const LIB_DIRS = ['/usr/lib/x86_64-linux-gnu/faketime', '/usr/lib/aarch64-linux-gnu/faketime', '/usr/lib/faketime', '/usr/local/lib/faketime'];

/** The multithreading-aware libfaketime (Node runs threads), or a clear error. */
function libfaketime() {
  for (const dir of LIB_DIRS) {
    for (const name of ['libfaketimeMT.so.1', 'libfaketime.so.1']) {
      const file = path.join(dir, name);
      if (fs.existsSync(file)) return file;
    }
  }
  throw new Error('libfaketime is needed (apt-get install faketime; .ci/run does it)');
}

/** env for a child whose wall clock is `offset` ("-10s", "+0") from the machine's. */
function offsetClock(offset) {
  return { LD_PRELOAD: libfaketime(), FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

/** {env, step(offset)}: a child's wall clock, right at first, stepped by step("-3600s") within about a second. */
function steppableClock() {
  const file = path.join(tmpDir('ged145-faketime-'), 'offset');
  fs.writeFileSync(file, '+0\n');
  return {
    env: {
      LD_PRELOAD: libfaketime(), FAKETIME_TIMESTAMP_FILE: file, FAKETIME_CACHE_DURATION: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    step(offset) {
      fs.writeFileSync(file, `${offset}\n`);
    },
  };
}

/** How far (s, rounded) the wall clock of the process serving http://127.0.0.1:port is from ours: its Date header. */
async function clockOffsetS(port) {
  const res = await fetch(`http://127.0.0.1:${port}/health`);
  await res.arrayBuffer();
  return Math.round((Date.parse(res.headers.get('date')) - Date.now()) / 1000);
}

module.exports = { offsetClock, steppableClock, clockOffsetS };
