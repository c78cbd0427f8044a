'use strict';

// --trace-frames N: the first N frames of a session each way, as hex and decoded, with redaction.

const assert = require('node:assert/strict');
const { serialize } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack } = require('../../helpers/stack');

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

  it('with log.redact, a frame of an unknown message type shows its header, not its body', async () => {
    const stack = await startStack({ gateway: { 'log.traceFrames': 5, 'log.redact': true } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      const body = Buffer.from('caller 5551234567 secret', 'latin1');
      const frame = Buffer.alloc(8 + body.length);
      frame.writeUInt32BE(body.length, 0);
      frame.writeUInt32BE(77, 4); // no such message type
      body.copy(frame, 8);
      c.send(frame);
      await c.waitForCount(2);
      const line = stack.log.lines.find((l) => l.message === 'frame in #2');
      assert.equal(line.hex, `${frame.subarray(0, 8).toString('hex')} [${body.length} body bytes of an unknown message type redacted]`);
      assert.ok(!JSON.stringify(stack.log.lines).includes(body.toString('hex')));
    } finally {
      c.close();
      await stack.stop();
    }
  });

  it('a reload that turns log.redact on covers the sessions already open', async () => {
    const stack = await startStack({ gateway: { 'log.traceFrames': 10, 'log.level': 'debug' }, logger: require('../../helpers/stack').captureLogger('debug') });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      const { loadConfig } = require('../../../gateway/config');
      stack.gateway.reload(loadConfig({
        env: {},
        overrides: {
          host: '127.0.0.1', port: stack.config.port, 'backend.url': stack.config.backend.url, warmup: false, 'log.traceFrames': 10, 'log.redact': true,
        },
      }));
      c.query(10, { subtype: 'echo', clid: '5551234567', vars: { 1: 'secret-value' } });
      await c.waitForCount(2);
      await new Promise((r) => setTimeout(r, 50));
      const text = JSON.stringify(stack.log.lines);
      assert.ok(text.includes('[redacted]'), 'the query lines were redacted');
      assert.ok(!text.includes('5551234567') && !text.includes('secret-value'), 'no caller data after the reload');
    } finally {
      c.close();
      await stack.stop();
    }
  });
});
