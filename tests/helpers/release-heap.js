'use strict';

// What the heap test uses to shrink a process's young generation as V8's memory reducer would, to
// see lib/heap.js let it grow back. The product does not call it (below: what it cost the warm-up).

/**
 * Gives the heap back after a burst of allocation the process will not repeat (such as the warm-up): a
 * full collection that also shrinks the young generation and releases emptied pages to the
 * system. Without it the warm-up's garbage stayed committed, 30-40 MB of RSS, until V8's memory
 * reducer ran, some 10-20 s later and only if the process allocated little meanwhile (a scraped
 * /metrics delayed it). V8 offers this collection (Isolate::LowMemoryNotification) to JavaScript
 * only through the inspector protocol's HeapProfiler.collectGarbage, which an in-process Session
 * sends without opening a port; global.gc, even where it can be had, neither shrinks the young
 * generation nor gives pages back. Resolves false where Node was built without the inspector.
 * The warm-up does not call it: its idle RSS at 20 s became a steady 71-73 MB with it, but the
 * first second of load after a start was slower (p99 medians of 30 against 18 ms over ten runs,
 * docs/performance.md), and a default does not trade latency for memory.
 */
async function releaseHeap() {
  let inspector;
  try {
    inspector = require('node:inspector');
  } catch {
    return false;
  }
  const session = new inspector.Session();
  session.connect();
  try {
    await new Promise((resolve, reject) => {
      session.post('HeapProfiler.collectGarbage', (err) => (err ? reject(err) : resolve()));
    });
  } finally {
    session.disconnect();
  }
  return true;
}

module.exports = { releaseHeap };
