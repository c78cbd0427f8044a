'use strict';

// The answer cache alone (gateway/backend/cache.js): what a key is, what is kept of an answer, and
// that the process's copy stays within cache.maxBytes whatever the backend sends.

const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { AnswerCache, cacheKey } = require('../../../gateway/backend/cache');
const { keptAnswer, ReplyWriter } = require('../../../gateway/answer/writer');
const { HEADER_LENGTH } = require('../../../lib/protocol');

/** A backend answer of about 35 KB: ten long variables, 300 ECC entries, 100 array elements. */
function bigAnswer(i) {
  return {
    vars: Object.fromEntries(Array.from({ length: 10 }, (_, k) => [k + 1, `${i}-${'v'.repeat(400)}`])),
    ecc: Object.fromEntries(Array.from({ length: 300 }, (_, k) => [`user.e${k}`, 'e'.repeat(90)])),
    eccArrays: Array.from({ length: 100 }, (_, k) => ({ name: 'user.a', index: k, value: 'a'.repeat(20) })),
    unused: 'x'.repeat(1000),
  };
}

describe('answer cache (unit)', () => {
  it('keys: the route first, always; null when a key field is missing or empty', () => {
    assert.equal(cacheKey({ subtype: 'balance', clid: '5551' }, ['clid']), '["balance","5551"]');
    assert.equal(cacheKey({ subtype: 'balance', clid: '5551' }, ['subtype', 'clid']), '["balance","5551"]');
    assert.equal(cacheKey({ clid: '5551' }, ['subtype', 'clid']), '[null,"5551"]', 'no subtype is the default route');
    assert.equal(cacheKey({ subtype: 's' }, ['clid']), null);
    assert.equal(cacheKey({ subtype: 's', clid: '' }, ['clid']), null);
    assert.equal(cacheKey({ subtype: 's', clid: '1', vars: {} }, ['clid', 'vars.3']), null);
    assert.equal(cacheKey({ subtype: 's', clid: '1', vars: { 3: 'x' } }, ['clid', 'vars.3']), '["s","1","x"]');
  });

  it('keeps the answer as it will be sent: cut to the tag limits and fitted to one frame', () => {
    const cache = new AnswerCache({ maxEntries: 10, maxBytes: 1024 * 1024, store: null }, { keep: keptAnswer(8192) });
    cache.set('k', bigAnswer(1), 60_000);
    const { answer } = cache.local.get('k');
    assert.equal(answer.unused, undefined, 'what a reply never carries is not kept');
    // Kept as one frame carries it: the kept answer encodes to at most 8 KiB with nothing more to cut.
    const { buf, notes } = new ReplyWriter({ maxBody: 8192 }).queryResp({ invokeId: 1 }, answer);
    assert.ok(buf.length - HEADER_LENGTH <= 8192, `${buf.length} bytes`);
    assert.deepEqual(notes, []);
    assert.ok(JSON.stringify(answer).length < 9000, `${JSON.stringify(answer).length} bytes kept of a 35 KB answer`);
    assert.equal(answer.vars[1].length, 255, 'a variable cut to its tag limit');
    assert.ok(Object.keys(answer.ecc).length < 300, 'ECC entries dropped from the end until the frame fits');
  });

  it('answers past cache.maxBytes evict the oldest', () => {
    const maxBytes = 1024 * 1024;
    const cache = new AnswerCache({ maxEntries: 100_000, maxBytes, store: null }, { keep: keptAnswer(8192) });
    for (let i = 0; i < 300; i++) cache.set(`k${i}`, bigAnswer(i), 60_000);
    assert.ok(cache.local.calculatedSize <= maxBytes, `${cache.local.calculatedSize} bytes`);
    assert.ok(cache.local.size > 50 && cache.local.size < 300, `${cache.local.size} entries kept, the oldest evicted`);
    assert.equal(cache.local.get('k0'), undefined);
    assert.notEqual(cache.local.get('k299'), undefined);
    assert.deepEqual(Object.keys(cache.toJSON()), ['entries', 'bytes', 'maxBytes', 'store']);
  });

  it('4,000 answers of 35 KB: the bytes counted, and what they add to the heap, stay within cache.maxBytes', function () {
    this.timeout(30_000);
    // In a process of its own, with a collection before each reading.
    const script = `
      const { AnswerCache } = require(${JSON.stringify(path.join(__dirname, '../../../gateway/backend/cache'))});
      const { keptAnswer } = require(${JSON.stringify(path.join(__dirname, '../../../gateway/answer/writer'))});
      const big = ${bigAnswer.toString()};
      const cache = new AnswerCache({ maxEntries: 100000, maxBytes: 16 * 1024 * 1024, store: null }, { keep: keptAnswer(8192) });
      global.gc(); const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 4000; i++) cache.set('k' + i, big(i), 60000);
      global.gc(); const after = process.memoryUsage().heapUsed;
      process.stdout.write(JSON.stringify({ grew: after - before, accounted: cache.local.calculatedSize, entries: cache.local.size }));`;
    const r = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' }));
    assert.ok(r.accounted <= 16 * 1024 * 1024 && r.entries < 4000, JSON.stringify(r));
    assert.ok(r.grew < 16 * 1024 * 1024, JSON.stringify(r));
  });
});
