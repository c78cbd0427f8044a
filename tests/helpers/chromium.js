'use strict';

// Headless Chromium for the tests that look at a page (the status page, the HTML reports): the
// Debian package's binary (CHROMIUM_PATH to use another), started with nothing of its own that
// would reach the network, so that a page that asks another host shows it.

const fs = require('node:fs');

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARGS = Object.freeze([
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
]);

/** A launched playwright-core Browser; close() it when done. */
function launchChromium() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`Chromium is needed at ${CHROMIUM} (apt-get install chromium; .ci/run does it)`);
  const { chromium } = require('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: [...ARGS] });
}

module.exports = { launchChromium };
