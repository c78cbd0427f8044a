'use strict';

// ged145 decode on a large capture: 300,000 TCP segments (150,000 queries and their answers), in
// under 60 s and 300 MB. It once built every segment and entry in memory and spread them into
// function arguments: "Maximum call stack size exceeded" on a 21 MB capture.

const assert = require('node:assert/strict');
const path = require('node:path');
const { tmpDir } = require('../helpers/tmp');
const { spawnCli } = require('../helpers/spawn');
const { PcapWriter } = require('../../simulator/pcap');
const { serialize } = require('../../lib/protocol');

// npm test runs a tenth of it; npm run test:stress (GED145_STRESS=1, in CI) the whole.
const STRESS = process.env.GED145_STRESS === '1';
const PAIRS = STRESS ? 150_000 : 15_000;

describe(`ged145 decode, a ${(2 * PAIRS).toLocaleString('en-US')}-segment capture`, function () {
  this.timeout(120_000);

  it('every message, in under 60 s and 300 MB', async () => {
    const file = path.join(tmpDir(), 'big.pcap');
    const w = new PcapWriter(file);
    const f = w.flow({ clientAddress: '10.0.0.1', clientPort: 40000, serverAddress: '10.0.0.2', serverPort: 5000 });
    f.out(serialize.openReq({ invokeId: 1, version: 2, idleTimeoutMs: 60000, config: 'big' }));
    f.in(serialize.openConf(1));
    for (let i = 2; i < PAIRS + 1; i++) {
      f.out(serialize.queryReq({ invokeId: i, routerCallDay: 1, routerCallKey: i, subtype: 's', clid: '5551234' }));
      f.in(serialize.queryResp({ invokeId: i, status: 0, vars: { 1: 'x' } }));
    }
    f.close();
    w.close();
    const started = Date.now();
    // The RSS high-water mark, from the kernel, as the process ends.
    const child = spawnCli(['decode', '--file', file], {
      cmdArgs: ['-e', `process.on('exit', () => process.stderr.write('maxrss ' + process.resourceUsage().maxRSS + '\\n'));
        process.argv.splice(1, 0, ${JSON.stringify(path.join(__dirname, '../../bin/ged145.js'))}); require(process.argv[1]);`, 'decode', '--file', file],
    });
    let lines = 0;
    child.stdout.on('data', (d) => { for (const c of d) if (c === 10) lines++; });
    const { code } = await child.exited;
    const seconds = (Date.now() - started) / 1000;
    assert.equal(code, 0, child.err);
    assert.equal(lines, 2 + 2 * (PAIRS - 1), 'OPEN_REQ, OPEN_CONF and every query and answer');
    const maxRssMb = Number(/maxrss (\d+)/.exec(child.err)[1]) / 1024;
    assert.ok(seconds < 60, `${seconds} s`);
    assert.ok(maxRssMb < 300, `${maxRssMb.toFixed(0)} MB`);
  });
});
