'use strict';

const assert = require('node:assert/strict');
const { WireClient } = require('../helpers/wire');
const { startStack, startTestBackend } = require('../helpers/stack');

describe('gateway warm-up', () => {
  it('runs synthetic queries before listening, never against the real backend', async () => {
    const backend = await startTestBackend((req, res) => res.end('{"vars":{"1":"real"}}'));
    const stack = await startStack({ backendUrl: backend.url, gateway: { warmup: true } });
    try {
      const line = stack.log.lines.find((l) => /^warmed up in \d+ ms$/.test(l.message));
      assert.ok(line, JSON.stringify(stack.log.lines.map((l) => l.message)));
      assert.equal(backend.requests.length, 0, 'the real backend saw no warm-up request');
      assert.doesNotMatch(await stack.gateway.metrics.text(), /subtype="warmup"/);
      // The warm-up's own sessions (a gateway of its own, on a throwaway port) log nowhere.
      assert.deepEqual(stack.log.lines.filter((l) => l.session !== undefined), []);
      assert.equal(stack.gateway.sessions.size, 0);
      const c = await WireClient.connect(stack.port);
      await c.open();
      c.query(2, { subtype: 'x' });
      assert.deepEqual((await c.waitFor((m) => m.invokeId === 2)).vars, { 1: 'real' });
      c.close();
    } finally {
      await stack.stop();
      await backend.close();
    }
  });
});
