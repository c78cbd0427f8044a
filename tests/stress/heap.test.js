'use strict';

// lib/heap.js in real Node processes: the young generation holds 1 MB per semi-space when
// told so, grows to the configured cap and no further, and grows to V8's own 16 MB without a cap;
// a gateway started by the CLI applies it to itself. Each process allocates short-lived garbage
// with some survivors, which is what makes V8 grow the young generation. What heapGrowthPercent
// does to RSS and latency is measured by bench/memory.js, not asserted here.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { spawnCli } = require('../helpers/spawn');
const { Router } = require('../../simulator/router');
const { tmpDir } = require('../helpers/tmp');

const HEAP = path.join(__dirname, '..', '..', 'lib', 'heap.js');
const RELEASE = path.join(__dirname, '..', 'helpers', 'release-heap.js');

/**
 * new_space size (MB, both semi-spaces) after churning the heap under the given settings; with
 * release, the heap is churned, given back (releaseHeap) and churned again.
 */
function youngAfterChurn(settings, { release = false } = {}) {
  const script = `
    const v8 = require('node:v8');
    const heap = require(${JSON.stringify(HEAP)});
    const { releaseHeap } = require(${JSON.stringify(RELEASE)});
    heap.holdYoungGeneration();
    heap.applyMemorySettings(${JSON.stringify(settings)});
    const keep = [];
    let rounds = 0;
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576;
    const churn = (done) => {
      for (let i = 0; i < 20000; i++) { const o = { i, s: 'x'.repeat(40) }; if (i % 8 === 0) keep.push(o); }
      if (keep.length > 200000) keep.length = 0;
      if (++rounds % 150 !== 0) setImmediate(churn, done);
      else done();
    };
    const report = () => process.stdout.write(String(young()));
    if (${release}) {
      churn(() => releaseHeap().then(() => {
        keep.length = 0;
        if (young() > 2) throw new Error('releaseHeap left the young generation at ' + young() + ' MB');
        churn(report);
      }));
    } else churn(report);`;
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
}

describe('gateway heap settings (lib/heap.js)', function () {
  this.timeout(30_000);

  it('youngGenerationMb 1: the young generation keeps its starting 1 MB semi-spaces', () => {
    assert.equal(youngAfterChurn({ youngGenerationMb: 1, heapGrowthPercent: 20 }), 2);
  });

  it('youngGenerationMb 4: it grows, and stops at the cap (4 MB per semi-space, 8 in all)', () => {
    const mb = youngAfterChurn({ youngGenerationMb: 4, heapGrowthPercent: 0 });
    assert.ok(mb > 2 && mb <= 8, `new space ${mb} MB`);
  });

  it('youngGenerationMb 4: given back by releaseHeap, it grows to the cap again under allocation', () => {
    const mb = youngAfterChurn({ youngGenerationMb: 4, heapGrowthPercent: 0 }, { release: true });
    assert.ok(mb > 2 && mb <= 8, `new space ${mb} MB`);
  });

  it('youngGenerationMb 16 is V8 left alone: it grows past any smaller cap', () => {
    assert.ok(youngAfterChurn({ youngGenerationMb: 16, heapGrowthPercent: 0 }) > 8);
  });
});

/** The young generation's size (both semi-spaces) a gateway reports on /metrics. */
function youngBytes(adminPort) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: Number(adminPort), path: '/metrics' }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve(Number(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m.exec(body)[1])));
    }).on('error', reject);
  });
}

/**
 * A gateway started by the CLI (extraArgs, env), against a real HTTP backend in this process:
 * its young generation once it listens (after the warm-up, when on), and after load (the router
 * simulator, 256 queries in flight for 3 s), which is what grows a young generation.
 */
async function gatewayYoungBytes(extraArgs, env) {
  const backend = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"vars":{"1":"heap"}}'));
  });
  await new Promise((r) => backend.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${backend.address().port}`;
  const child = spawnCli(['gateway', '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--backend', url, '--ready-json', ...extraArgs], { env });
  try {
    const { port, adminPort } = await child.ready();
    const listening = await youngBytes(adminPort);
    const router = new Router({ targets: [{ host: '127.0.0.1', port: Number(port) }], seed: 1, templates: [{ subtype: 'heap', clid: '555{seq}' }] });
    await router.start();
    await router.runClosedLoop({ window: 256, durationMs: 3000 });
    const stats = await router.stop();
    assert.ok(stats.answered > 1000, `${stats.answered} queries answered`);
    return { listening, loaded: await youngBytes(adminPort) };
  } finally {
    child.killGroup();
    await child.exited;
    await new Promise((r) => backend.close(r));
  }
}

const MB = 1024 * 1024;

describe('the gateway sizes its own heap (no NODE_OPTIONS)', function () {
  this.timeout(60_000);

  it('by default: after the warm-up, load holds the young generation at its cap (8 MB a semi-space)', async () => {
    const { loaded } = await gatewayYoungBytes([], { GED145_WARMUP: '1' });
    assert.ok(loaded > 2 * MB && loaded <= 2 * 8 * MB, `new space ${loaded / MB} MB under load`);
  });

  it('memory.youngGenerationMb 1 in its config file: under load it stays at 1 MB per semi-space', async () => {
    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ memory: { youngGenerationMb: 1 } }));
    assert.equal((await gatewayYoungBytes(['--config', file])).loaded, 2 * MB);
  });

  it('memory.youngGenerationMb 16 in its config file: under load it grows as V8 would', async () => {
    const file = path.join(tmpDir(), 'gateway.json');
    fs.writeFileSync(file, JSON.stringify({ memory: { youngGenerationMb: 16, heapGrowthPercent: 0 } }));
    assert.ok((await gatewayYoungBytes(['--config', file])).loaded > 2 * MB);
  });
});
