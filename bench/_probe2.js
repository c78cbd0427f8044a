const h = require('./harness');
const { Router } = require('../simulator/router');
const { Timeline } = require('../runner/timeline');
(async () => {
  const backend = await h.startPlainBackend();
  const gw = await h.startGateway(backend.url);
  // warm the client side only, against a bare server
  const bare = await h.startBare();
  for (const [name, port] of [['bare-warm-client', bare.port], ['gateway-cold', gw.port], ['gateway-warm', gw.port]]) {
    const router = new Router({ targets: [{ host: '127.0.0.1', port }], seed: 1 });
    await router.start();
    const tl = new Timeline(router).start();
    await router.runOpenLoop({ rate: 2000, durationMs: 3000 });
    const pts = tl.stop();
    const s = await router.stop();
    console.log(name, pts.map(p => `${p.t}s p99=${p.p99} max=${p.max}`).join(' | '));
  }
  await gw.stop(); await backend.stop(); await bare.stop();
})();
