'use strict';

// --trace-frames N: the first N frames of a session each way, as hex and decoded, with redaction.

const assert = require('node:assert/strict');
const { serialize } = require('../../lib/protocol');
const { WireClient } = require('../helpers/wire');
const { startStack } = require('../helpers/stack');

async function traced(gateway) {
  const stack = await startStack({ gateway: { 'log.traceFrames': 3, ...gateway } });
  const c = await WireClient.connect(stack.port);
  try {
    await c.open({ config: 'trace-me' });
    for (let i = 0; i < 4; i++) c.query(10 + i, { subtype: 'echo', clid: '5551234567', vars: { 1: 'secret-value' } });
    await c.waitForCount(5);
    await new Promise((r) => setTimeout(r, 50));
    return stack.log.lines.filter((l) => /^frame (in|out) #/.test(l.message));
  } finally {
    c.close();
    await stack.stop();
  }
}

describe('--trace-frames', () => {
  it('logs the first N frames each way, as hex and decoded, and no more', async () => {
    const lines = await traced({});
    assert.deepEqual(lines.map((l) => l.message).sort(), ['frame in #1', 'frame in #2', 'frame in #3', 'frame out #1', 'frame out #2', 'frame out #3']);
    assert.equal(lines.filter((l) => l.message.startsWith('frame in')).length, 3);
    assert.equal(lines.filter((l) => l.message.startsWith('frame out')).length, 3);
    const open = lines.find((l) => l.message === 'frame in #1');
    const bytes = serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60_000, config: 'trace-me' }, { nul: true }).toString('hex');
    assert.equal(open.hex.replace(' ', ''), bytes);
    assert.deepEqual([open.decoded.type, open.decoded.config], ['OPEN_REQ', 'trace-me']);
    const q = lines.find((l) => l.message === 'frame in #2');
    assert.deepEqual([q.decoded.type, q.decoded.clid, q.decoded.vars], ['QUERY_REQ', '5551234567', { 1: 'secret-value' }]);
    const conf = lines.find((l) => l.message === 'frame out #1');
    assert.equal(conf.decoded.type, 'OPEN_CONF');
    assert.match(conf.hex, /^0000000400000004 00000001$/);
  });

  it('with log.redact the hex stops at the fixed part and caller data is hidden', async () => {
    const lines = await traced({ 'log.redact': true });
    const q = lines.find((l) => l.message === 'frame in #2');
    assert.match(q.hex, /\[\d+ tag bytes redacted\]$/);
    assert.equal(q.decoded.clid, '[redacted]');
    const text = JSON.stringify(lines);
    assert.ok(!text.includes('5551234567') && !text.includes('secret-value'));
    assert.ok(!text.includes(Buffer.from('5551234567').toString('hex')));
  });
});
