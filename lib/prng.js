'use strict';

// Seeded randomness for everything that must be repeatable: the REST simulator's customers and
// faults, the router simulator's workload and injections, the fuzzer.

/** mulberry32: a small, fast, seeded PRNG. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

module.exports = { prng };
