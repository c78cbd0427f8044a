'use strict';

// The case table: every case of the kit, by area. A case's id is written in its file and never
// reused for another check (reports and CI history refer to it); docs/conformance.md is
// generated from this table (tools/conformance/doc.js) and a test checks that it matches.

const CASES = Object.freeze([
  ...require('./framing'),
  ...require('./session'),
  ...require('./query'),
  ...require('./errors'),
  ...require('./timing'),
  ...require('./transport'),
]);

const LEVELS = Object.freeze(['MUST', 'SHOULD', 'INFO']);

/** What a case may need that a run must declare, and the flag that declares it. */
const NEEDS = Object.freeze({
  slowSubtype: '--slow-subtype NAME (a subtype the host\'s backend answers after RequestTimeout)',
  failingSubtype: '--failing-subtype NAME (a subtype the host\'s backend fails)',
  desKey: '--des-key KEY (the host\'s DES private key)',
  tls: '--tls (the host listens with TLS; --ca FILE to verify it)',
});

module.exports = { CASES, LEVELS, NEEDS };
