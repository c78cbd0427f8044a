'use strict';

// V8 heap settings the gateway makes for itself (docs/performance.md, "Memory"). Node sizes its
// heap for throughput on big machines: after the warm-up the gateway held about 105 MB RSS idle
// and 140 MB under 2,000 queries/s, most of it a 32 MB young generation and old-generation garbage
// V8 had not needed to collect yet. These V8 flags are read while the process runs, so the gateway
// sets them itself, before its modules load, instead of asking operators for NODE_OPTIONS:
//   --liftoff-only             undici's HTTP parser (WebAssembly) stays with V8's baseline compiler:
//                              the optimizing compile that followed the first requests peaked at
//                              20-30 MB, for a parser that is under 1% of the gateway's CPU.
//   --semi-space-growth-factor the young generation starts at 1 MB per semi-space and V8 doubles it
//                              up to 16 MB as allocation goes on; memory.youngGenerationMb caps it.
//   --no-allocation-site-pretenuring
//                              V8 allocates objects straight into the old generation once most
//                              from one site outlived a collection; with a small young generation
//                              the warm-up's 32 queries in flight taught it that for AbortSignals,
//                              request handlers and timers, which then die young in the old
//                              generation: a mark-compact every few seconds and a p99 of 13-52 ms
//                              at 2,000 queries/s (5-20 ms without it; 6-7 ms with Node's own young
//                              generation, 16 MB semi-spaces, and its RSS).
//   --heap-growing-percent     the old generation is collected once it has grown this much past
//                              what was live after the last collection (V8's own choice: 10-300%).

const v8 = require('node:v8');
const { PerformanceObserver } = require('node:perf_hooks');

const V8_MAX_SEMI_SPACE_MB = 16; // Node 20 on 64-bit
const newSpaceBytes = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;

/** First thing in a gateway process: the young generation holds its starting size while modules load. */
function holdYoungGeneration() {
  v8.setFlagsFromString('--liftoff-only');
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
  v8.setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * Once the configuration is known: memory.youngGenerationMb (1..16 MB per semi-space; V8 grows it
 * by doubling, so the cap is reached at the first power of two at or above it) and
 * memory.heapGrowthPercent (0 = V8's own heuristics).
 */
function applyMemorySettings({ youngGenerationMb, heapGrowthPercent }) {
  if (heapGrowthPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${heapGrowthPercent}`);
  youngCapMb = youngGenerationMb;
  growYoungGeneration();
}

let youngCapMb = 1; // memory.youngGenerationMb once applyMemorySettings ran; 1 = never grows
let growing = null; // the observer that keeps the young generation growing up to its cap

/**
 * Lets the young generation grow to memory.youngGenerationMb, from whatever size it has, for the
 * process's life: after each collection this sets V8's growth factor to 2 below the cap and to 1
 * at it. V8 doubles the young generation at a scavenge once what survived since its last growth
 * outweighs it, which load does within a few collections and an idle process (a /metrics scrape a
 * second) hardly at all; and it shrinks it back to 1 MB after a full collection that gives memory
 * back (releaseHeap) or while allocation is slow (an idle gateway), after which a factor left at 1
 * would hold it there under the next load, for several times the scavenges.
 */
function growYoungGeneration() {
  if (growing !== null || youngCapMb <= 1) return;
  if (youngCapMb >= V8_MAX_SEMI_SPACE_MB) {
    v8.setFlagsFromString('--semi-space-growth-factor=2');
    return;
  }
  const cap = youngCapMb * 2 * 1024 * 1024; // new_space counts both semi-spaces
  let factor = 0;
  const check = () => {
    const wanted = newSpaceBytes() < cap ? 2 : 1;
    if (wanted === factor) return;
    factor = wanted;
    v8.setFlagsFromString(`--semi-space-growth-factor=${factor}`);
  };
  check();
  growing = new PerformanceObserver(check);
  growing.observe({ entryTypes: ['gc'] });
}

module.exports = {
  holdYoungGeneration, applyMemorySettings, V8_MAX_SEMI_SPACE_MB,
};
