'use strict';

// A canary's answers in traces: a gateway process with a canary on a listed DN_STRING and only
// OTEL_* set, a real OTLP receiver, the live route a test backend and the candidate another. The
// query the candidate answered carries ged145.canary.candidate; the live route's does not.

const assert = require('node:assert/strict');
const { WireClient } = require('../../helpers/wire');
const { tmpDir } = require('../../helpers/tmp');
const { startTestBackend } = require('../../helpers/stack');
const { startGateway } = require('../../helpers/real-backend');
const { startOtlpReceiver } = require('../../helpers/otlp-receiver');

const DN = '8005550100';

/** A backend answering the default contract with VAR9 = name. */
function answering(name) {
  return startTestBackend((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ vars: { 9: name } }));
  });
}

describe('traces: a canary\'s answers', function () {
  this.timeout(60_000);
  const cleanup = [];
  after(async () => { for (const f of cleanup.reverse()) await f(); });

  it('the query span of a canary answer names its candidate; a live answer\'s does not', async () => {
    const live = await answering('live');
    const candidate = await answering('candidate');
    const receiver = await startOtlpReceiver();
    cleanup.push(() => live.close(), () => candidate.close(), () => receiver.close());
    const cleared = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('OTEL_')).map((k) => [k, '']));
    const g = await startGateway({
      backend: { url: live.url },
      candidates: { v2: { backend: candidate.url } },
      routes: { echo: { canary: { candidate: 'v2', dialedNumbers: [DN], percent: 0 } } },
    }, {
      dir: tmpDir(),
      env: {
        ...cleared, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    });
    cleanup.push(() => g.stop());
    const c = await WireClient.connect(g.port);
    cleanup.push(() => c.close());
    await c.open();
    c.query(11, { subtype: 'echo', dn: DN });
    c.query(12, { subtype: 'echo', dn: '8005550199' });
    const replies = await Promise.all([11, 12].map((id) => c.waitFor((m) => m.invokeId === id, 5000)));
    assert.deepEqual(replies.map((r) => r.vars), [{ 9: 'candidate' }, { 9: 'live' }]);

    const spans = await receiver.waitForSpans((s) => s.filter((x) => x.name === 'ged145 query echo').length >= 2);
    const byInvoke = new Map(spans.filter((x) => x.name === 'ged145 query echo').map((x) => [x.attributes['ged145.query.invoke_id'], x]));
    assert.equal(byInvoke.get(11).attributes['ged145.canary.candidate'], 'v2');
    assert.equal(byInvoke.get(12).attributes['ged145.canary.candidate'], undefined);
  });
});
