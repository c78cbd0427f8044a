'use strict';

// Configuration and logs as an operator meets them: every bad setting stops the start with one
// line naming the key (and the environment variable it came from); the allowlist takes CIDR
// ranges; console lines cannot be forged by router text; redaction covers every caller field.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const sinon = require('sinon');
const { loadConfig } = require('../../../gateway/config');
const { readRegularFile, readTextInPieces } = require('../../../lib/files');
const { describeQuery } = require('../../../gateway/session/redact');
const { WireClient } = require('../../helpers/wire');
const { startStack } = require('../../helpers/stack');

const load = (overrides, env = {}) => loadConfig({ env, overrides });

describe('gateway config: refusals name the key', () => {
  const refused = [
    [{ routes: { x: { url: 'http://h/x', respone: {} } } }, /unknown key 'routes\.x\.respone' \(did you mean 'routes\.x\.response'\?\)/],
    [{ routes: { x: { module: './m.js', url: 'http://h/' } } }, /routes\.x: unknown key 'url'/],
    [{ allowlist: ['10.0.0.1', 'router-a.example'] }, /allowlist entry 'router-a\.example' is not an IP address or CIDR range/],
    [{ allowlist: ['10.0.0.0/40'] }, /allowlist entry '10\.0\.0\.0\/40' has a bad prefix length/],
    [{ allowlist: '10.0.0.1' }, /allowlist must be a list/],
    [{ 'log.redact': 'yes' }, /log\.redact must be true or false/],
    [{ 'backend.url': 'http://crm:8080/api?tenant=7' }, /backend\.url must not have a query string/],
    [{ deadlineMs: 300 }, /deadlineMs \(300\) must be below the router's RequestTimeout, routerRequestTimeoutMs \(300\)/],
    [{ 'limits.closeLingerMs': 120_000 }, /limits\.closeLingerMs must be an integer from 0 to 60000/],
    [{ shutdownTimeoutMs: -1 }, /shutdownTimeoutMs must be an integer from 0 to 600000/],
    [{ 'memory.youngGenerationMb': 32 }, /memory\.youngGenerationMb must be an integer from 1 to 16 \(MB\)/],
    [{ 'memory.heapGrowthPercent': -5 }, /memory\.heapGrowthPercent must be an integer from 0 \(V8 decides\) to 1000/],
    [{ host: '999.1.1.1' }, /host '999\.1\.1\.1' is not a valid IPv4 address/],
    // Never on every address by accident, never a stack trace for a null section.
    [{ 'admin.host': '' }, /config: admin\.host must be the address to serve \/sessions and \/metrics on .*not ""$/],
    [{ 'admin.host': null }, /config: admin\.host must be the address .*not null$/],
    [{ admin: null }, /config: admin must be an object of settings, not null$/],
    ...['limits', 'log', 'tls', 'des', 'memory', 'protocol', 'backend', 'retry']
      .map((k) => [{ [k]: null }, new RegExp(`config: ${k} must be an object of settings, not null$`)]),
    [{ limits: 5 }, /config: limits must be an object of settings, not 5$/],
    [{ 'backend.url': 'http://user:secret@crm:8080' }, /config: backend\.url must not carry a user or password .*"headers"/],
    [{ 'backend.url': 'http://crm:8080', routes: { x: { url: 'https://u:p@h/x' } } }, /config: routes\.x\.url must not carry a user or password/],
    [{ 'backend.url': '127.0.0.1:3000' }, /backend\.url must be an http:\/\/ or https:\/\/ URL \(or a list of them\) \(did you mean http:\/\/127\.0\.0\.1:3000\?\)/],
    [{ breaker: { consecutiveFailures: 5 } }, /breaker\.consecutiveFailures is gone: the circuit opens on a failure ratio/],
    [{ breaker: { failureRatio: 1.5 } }, /breaker\.failureRatio must be a number above 0 and at most 1/],
    [{ breaker: { halfOpenAfterMs: 1000, maxHalfOpenAfterMs: 500 } }, /breaker\.maxHalfOpenAfterMs must be an integer from halfOpenAfterMs \(1000\)/],
    [{ 'limits.maxQueuedBytes': -1 }, /limits\.maxQueuedBytes must be an integer from 0 to 1073741824/],
    [{ deadlinMs: 200 }, /config: unknown key 'deadlinMs' \(did you mean 'deadlineMs'\?\)$/],
    [{ 'limits.maxInFlite': 5 }, /config: unknown key 'limits\.maxInFlite' \(did you mean 'limits\.maxInFlight'\?\)$/],
  ];
  for (const [overrides, re] of refused) {
    it(`refuses ${JSON.stringify(overrides)}`, () => {
      assert.throws(() => load(overrides), re);
    });
  }

  it('no error message shows the password of a refused URL', () => {
    assert.throws(() => load({ 'backend.url': 'http://user:s3cr3t@crm:8080' }), (err) => !err.message.includes('s3cr3t'));
  });

  it('breaker may still be switched off with false or null', () => {
    assert.equal(load({ 'backend.url': 'http://crm:8080', breaker: false }).availability.breaker.enabled, false);
  });

  it('a deadline at or past 300 ms is accepted once routerRequestTimeoutMs says the router waits longer', () => {
    assert.equal(load({ deadlineMs: 900, routerRequestTimeoutMs: 1000 }).deadlineMs, 900);
  });

  it('an error from the environment names the variable', () => {
    assert.throws(() => load({}, { GED145_PORT: 'abc' }), /GED145_PORT=abc: must be a number/);
    assert.throws(() => load({}, { GED145_PORT: '70000' }), /port must be a port number 0\.\.65535 \(from GED145_PORT=70000\)/);
    assert.throws(() => load({}, { GED145_DEADLINE_MS: '400' }), /\(from GED145_DEADLINE_MS=400\)/);
    // a flag wins over the environment, and the error then names no variable
    assert.throws(() => load({ port: 70000 }, { GED145_PORT: '5000' }), (err) => /port must be/.test(err.message) && !/GED145_PORT/.test(err.message));
  });

  it('GED145_REDACT takes the usual spellings in any case and refuses others', () => {
    for (const [v, want] of [['1', true], ['0', false], ['true', true], ['FALSE', false], ['Yes', true], ['no', false], ['on', true], ['OFF', false]]) {
      assert.equal(load({}, { GED145_REDACT: v }).log.redact, want, v);
    }
    assert.throws(() => load({}, { GED145_REDACT: 'maybe' }), /GED145_REDACT=maybe: must be 1\/0, true\/false, yes\/no or on\/off/);
    assert.equal(load({}, { GED145_WARMUP: '0' }).warmup, false);
    assert.equal(load({}, {}).warmup, true);
  });
});

describe('gateway config: the files an operator names', () => {
  const { tmpDir } = require('../../helpers/tmp');
  const fs = require('node:fs');
  const path = require('node:path');
  const write = (name, text) => {
    const file = path.join(tmpDir(), name);
    fs.writeFileSync(file, text);
    return file;
  };
  const loadFile = (file, overrides = {}) => loadConfig({ file, env: {}, overrides: { 'backend.url': 'http://crm:8080', ...overrides } });

  it('a mode\'s defaults (--embedded-backend: host 127.0.0.1) give way to the file, the environment and the flags', () => {
    const defaults = { host: '127.0.0.1' };
    const host = (file, env, overrides) => loadConfig({
      file, env, overrides: { 'backend.url': 'http://crm:8080', ...overrides }, defaults,
    }).host;
    assert.equal(host(undefined, {}, {}), '127.0.0.1');
    assert.equal(host(write('g.json', '{"host": "10.0.0.7"}'), {}, {}), '10.0.0.7');
    assert.equal(host(undefined, { GED145_HOST: '0.0.0.0' }, {}), '0.0.0.0');
    assert.equal(host(undefined, { GED145_HOST: '0.0.0.0' }, { host: '::1' }), '::1');
    assert.equal(loadFile(write('g.json', '{}')).host, '0.0.0.0', 'without the mode, the schema\'s default');
  });

  it('a JSON error says line and column', () => {
    assert.throws(() => loadFile(write('g.json', '{\n  "deadlineMs": 200,\n  "port" 5000\n}')), /is not valid JSON: line 3, column 10 \(key port\): a colon was expected after the key$/);
  });

  it('a file that holds a list, a string or null is refused', () => {
    for (const text of ['[]', '"x"', 'null', '7']) assert.throws(() => loadFile(write('g.json', text)), /must hold a JSON object/, text);
  });

  it('only regular files of a sane size are read: /dev/zero and /dev/urandom are refused at once', () => {
    assert.throws(() => loadFile('/dev/zero'), /config: \/dev\/zero is not a regular file$/);
    assert.throws(() => loadFile(write('g.json', '{}'), { 'des.keyFile': '/dev/urandom' }), /config: des\.keyFile: \/dev\/urandom is not a regular file$/);
    assert.throws(() => loadFile(write('big.json', `{"x": "${'a'.repeat(5 * 1024 * 1024)}"}`)), /bytes; at most 4194304 are read/);
    assert.throws(() => loadFile(write('g.json', '{}'), { 'des.keyFile': write('k', 'a'.repeat(5000)) }), /at most 4096 are read/);
  });

  it('a file is read into a buffer of its own size, not of the limit (a 4 MB buffer freed at a start kept 4 MB of RSS for good)', () => {
    // Freeing a buffer that came from mmap raises glibc's mmap threshold (docs/performance.md, "Memory").
    const file = write('g.json', '{}');
    const before = process.memoryUsage().arrayBuffers;
    const bytes = readRegularFile(file, { maxBytes: 4 * 1024 * 1024, what: 'config' });
    const grown = process.memoryUsage().arrayBuffers - before;
    assert.equal(bytes.toString(), '{}');
    assert.ok(grown < 64 * 1024, `reading 2 bytes took ${grown} bytes of buffers`);
  });

  it('a text read in 64 KB pieces keeps the characters that straddle them (the generated validator is read so)', () => {
    const text = `a${'é€😀'.repeat(40_000)}`; // 2-, 3- and 4-byte characters across every piece boundary
    assert.equal(readTextInPieces(write('utf8.txt', text)), text);
    assert.equal(readTextInPieces(write('empty.txt', '')), '');
  });

  it('a file that grows between its size and its read is read whole, and refused once past the limit', () => {
    const text = 'x'.repeat(10_000);
    const file = write('grows.json', text);
    const fstat = fs.fstatSync;
    const stub = sinon.stub(fs, 'fstatSync').callsFake((fd) => Object.assign(fstat(fd), { size: 1 })); // as it was a moment before
    try {
      assert.equal(readRegularFile(file, { maxBytes: 20_000, what: 'config' }).toString(), text);
      assert.equal(readRegularFile(file, { maxBytes: 10_000, what: 'config' }).toString(), text, 'exactly the limit');
      assert.throws(() => readRegularFile(file, { maxBytes: 9_999, what: 'config' }), /config: .*grows\.json is over 9999 bytes$/);
    } finally {
      stub.restore();
    }
  });

  it('an empty key file is an error, not "no key"', () => {
    assert.throws(() => loadFile(write('g.json', '{}'), { 'des.keyFile': write('empty.key', '\n') }), /des\.keyFile: .*empty\.key is empty/);
  });
});

describe('allowlist with addresses and CIDR ranges', function () {
  this.timeout(10_000);
  for (const [list, admitted] of [[['127.0.0.0/8'], true], [['::ffff:127.0.0.1'], true], [['127.0.0.1', '::1'], true], [['10.0.0.0/8', 'fd00::/8'], false]]) {
    it(`${JSON.stringify(list)}: a router on 127.0.0.1 is ${admitted ? 'admitted' : 'closed before a byte is read'}`, async () => {
      const stack = await startStack({ gateway: { allowlist: list } });
      const c = await WireClient.connect(stack.port);
      try {
        if (admitted) assert.equal((await c.open()).type, 'OPEN_CONF');
        else {
          await c.waitClosed();
          assert.deepEqual(c.messages, []);
        }
      } finally {
        c.close();
        await stack.stop();
      }
    });
  }
});

describe('logs', () => {
  it('console lines escape control characters: router text cannot forge a line or colour the terminal', () => {
    const script = `
      const { createLogger } = require('./lib/logger');
      const log = createLogger({ component: 'gateway' });
      log.info(
        'session opened', { connectInfo: 'lab\\n2026-01-01T00:00:00.000Z error [gateway] FORGED\\u001b[31m', subtype: 'a\\rb', nested: { v: '\\u001b[2J' } }
      );
      log.warn('PARAM\\nFORGED');
    `;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: `${__dirname}/../../..`, encoding: 'utf8' });
    const lines = r.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 2, r.stderr);
    assert.ok(!r.stderr.includes('\u001b'), 'no raw escape character');
    assert.ok(!r.stderr.includes('\r'));
    assert.match(lines[0], /connectInfo=lab\\n2026.*FORGED\\x1b\[31m subtype=a\\rb nested=\{"v":"\\u001b\[2J"\}/);
    assert.match(lines[1], /PARAM\\nFORGED$/);
  });

  it('describeQuery: redact hides CLID, CED, CDPD, DN and every value; absent fields are left out', () => {
    const q = {
      invokeId: 4, subtype: 's', clid: '5551234567', dn: '8005551000', ced: '12#', vars: { 1: 'secret' }, ecc: { 'user.a': 'x' }, eccArrays: [{
        name: 'user.h', index: 2, value: 'y',
      }],
    };
    const shown = describeQuery(q, 9, true);
    assert.deepEqual(shown, {
      session: 9, invokeId: 4, subtype: 's', clid: '[redacted]', ced: '[redacted]', dn: '[redacted]', vars: { 1: '[redacted]' },
      ecc: { 'user.a': '[redacted]' }, eccArrays: [{ name: 'user.h', index: 2, value: '[redacted]' }],
    });
    const bare = describeQuery({ invokeId: 5, subtype: 's' }, 9, false);
    assert.deepEqual(bare, { session: 9, invokeId: 5, subtype: 's' });
    assert.ok(!JSON.stringify(bare).includes('undefined'));
  });

  it('under log.redact a debug query line carries no DN, and names no absent field', async () => {
    const { captureLogger } = require('../../helpers/stack');
    const log = captureLogger('debug');
    const stack = await startStack({ logger: log, gateway: { 'log.redact': true, 'log.level': 'debug' } });
    const c = await WireClient.connect(stack.port);
    try {
      await c.open();
      c.query(7, { subtype: 'echo', dn: '8005551000' });
      await c.waitFor((m) => m.invokeId === 7);
      const line = log.lines.find((l) => l.message === 'query' && l.invokeId === 7);
      assert.equal(line.dn, '[redacted]');
      assert.ok(!('ced' in line) && !('clid' in line), JSON.stringify(line));
      assert.ok(!JSON.stringify(log.lines).includes('8005551000'));
    } finally {
      c.close();
      await stack.stop();
    }
  });

  it('listening on every address with an empty allowlist logs one warning at start', async () => {
    const open = await startStack({ gateway: { host: '0.0.0.0' } });
    const closed = await startStack({ gateway: { host: '0.0.0.0', allowlist: ['127.0.0.1'] } });
    try {
      assert.equal(open.log.lines.filter((l) => /empty allowlist/.test(l.message) && l.level === 'warn').length, 1);
      assert.equal(closed.log.lines.filter((l) => /empty allowlist/.test(l.message)).length, 0);
    } finally {
      await open.stop();
      await closed.stop();
    }
  });
});
