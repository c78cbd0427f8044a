'use strict';

// QuerySignal: the abort signal of a query in flight (gateway/backend/abort.js), and the real AbortSignal
// it gives to code that hands a signal on.

const assert = require('node:assert/strict');
const { QuerySignal, asAbortSignal } = require('../../../gateway/backend/abort');

describe('QuerySignal', () => {
  it('calls each abort listener once, functions and handleEvent objects alike, with the reason set', () => {
    const s = new QuerySignal();
    const seen = [];
    const fn = function listener(event) { seen.push(['fn', event.type, this.reason]); };
    const obj = { handleEvent: (event) => seen.push(['obj', event.type, s.reason]) };
    s.addEventListener('abort', fn);
    s.addEventListener('abort', fn); // the same listener twice is one listener, as with EventTarget
    s.addEventListener('abort', obj);
    s.addEventListener('other', () => seen.push(['other']));
    s.abort('why');
    s.abort('again');
    assert.deepEqual(seen, [['fn', 'abort', 'why'], ['obj', 'abort', 'why']]);
    assert.equal(s.aborted, true);
    assert.equal(s.reason, 'why');
  });

  it('does not call a removed listener, nor one added after the abort', () => {
    const s = new QuerySignal();
    let calls = 0;
    const fn = () => { calls++; };
    s.addEventListener('abort', fn);
    s.removeEventListener('abort', fn);
    s.abort();
    s.addEventListener('abort', fn);
    assert.equal(calls, 0);
  });

  it('an abort without a reason is an AbortError, as with AbortController', () => {
    const s = new QuerySignal();
    s.abort();
    const c = new AbortController();
    c.abort();
    assert.ok(s.reason instanceof DOMException);
    assert.equal(s.reason.name, c.signal.reason.name);
  });

  it('gives a real AbortSignal that follows it, made before or after the abort', () => {
    const before = new QuerySignal();
    const real = asAbortSignal(before);
    assert.ok(real instanceof AbortSignal);
    assert.equal(asAbortSignal(before), real, 'one AbortSignal per query');
    let fired = 0;
    real.addEventListener('abort', () => { fired++; });
    before.abort('late');
    assert.deepEqual([real.aborted, real.reason, fired], [true, 'late', 1]);
    const after = new QuerySignal();
    after.abort('early');
    assert.deepEqual([asAbortSignal(after).aborted, asAbortSignal(after).reason], [true, 'early']);
  });

  it('hands real AbortSignals and undefined on unchanged', () => {
    const { signal } = new AbortController();
    assert.equal(asAbortSignal(signal), signal);
    assert.equal(asAbortSignal(undefined), undefined);
  });
});
