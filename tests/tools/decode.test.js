'use strict';

// ged145 decode as a user runs it: hex as an argument or on stdin, a raw byte file, and pcap and
// pcapng captures made by the router simulator against a real gateway (plain and DES-encrypted).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const { serialize } = require('../../lib/protocol');
const { Router } = require('../../simulator/router');
const { startStack } = require('../helpers/stack');
const { runCli } = require('../helpers/spawn');
const { tmpDir } = require('../helpers/tmp');

const BIN = path.join(__dirname, '..', '..', 'bin', 'ged145.js');
const KEY = '12345678';

function withStdin(args, input) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'decode', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => resolve({ code, out, err }));
    child.stdin.end(input);
  });
}

async function capture(file, { desKey } = {}) {
  const stack = await startStack({ env: desKey ? { GED145_DES_KEY: desKey } : {} });
  const router = new Router({
    targets: [{ host: '127.0.0.1', port: stack.port }], pcap: file, seed: 3, templates: [{ subtype: 'echo', vars: { 1: 'v{seq}' } }],
    desKey: desKey ? Buffer.from(desKey) : null, injection: { frag: 2 },
  });
  await router.start();
  await router.runClosedLoop({ window: 4, count: 20 });
  const s = await router.stop();
  await stack.stop();
  return { port: stack.port, summary: s };
}

describe('ged145 decode', function () {
  this.timeout(30_000);
  const bad = Buffer.from('00000010' + '00000009' + '00000005000000010000000200' + '030561', 'hex'); // SUBTYPE says 5 bytes, 1 is there

  it('hex as an argument', async () => {
    const r = await runCli(['decode', '00000004 00000007 00000001']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out.trim(), /^- {2}router->host {2}HEARTBEAT_REQ id=1$/);
  });

  it('hex on stdin, a bad frame shown in place, the rest still decoded, direction by type', async () => {
    const hex = [serialize.openReq({
      invokeId: 1, version: 2, idleTimeoutMs: 60000, config: 'x',
    }), bad, serialize.queryResp({ invokeId: 5, status: 0, vars: { 1: 'ok' } })]
      .map((b) => b.toString('hex')).join('\n');
    const r = await withStdin([], hex);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.trim().split('\n');
    assert.equal(lines.length, 3, r.out);
    assert.match(lines[0], /router->host {2}OPEN_REQ id=1 version=2/);
    assert.match(lines[1], /! tag_overrun: .* \(InvokeID 5\)/);
    assert.match(lines[2], /host->router {2}QUERY_RESP id=5 E_AG_NO_ERROR vars=\{"1":"ok"\}/);
  });

  it('a raw byte file, and a frame cut off at the end', async () => {
    const file = path.join(tmpDir(), 'raw.bin');
    const hb = serialize.heartbeatReq(3);
    fs.writeFileSync(file, Buffer.concat([hb, hb.subarray(0, 5)]));
    const r = await runCli(['decode', '--file', file]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /HEARTBEAT_REQ id=3/);
    assert.match(r.out, /! incomplete: 5 bytes of an unfinished frame at the end/);
  });

  it('a pcap and the same capture as pcapng: both directions, every message, in time order', async () => {
    const dir = tmpDir();
    const pcap = path.join(dir, 's.pcap');
    const { summary } = await capture(pcap);
    const r = await runCli(['decode', '--file', pcap, '--json']);
    assert.equal(r.code, 0, r.err);
    const entries = JSON.parse(r.out);
    const queries = entries.filter((e) => e.message && e.message.type === 'QUERY_REQ');
    const replies = entries.filter((e) => e.message && e.message.type === 'QUERY_RESP');
    assert.equal(queries.length, summary.sent);
    assert.equal(replies.length, summary.answered);
    assert.ok(queries.every((e) => e.direction === 'router->host') && replies.every((e) => e.direction === 'host->router'));
    assert.deepEqual(entries.map((e) => e.time), [...entries.map((e) => e.time)].sort((a, b) => a - b));
    assert.equal(entries.filter((e) => e.error).length, 0);
    const pcapng = path.join(dir, 's.pcapng');
    execFileSync('editcap', ['-F', 'pcapng', pcap, pcapng]);
    const ng = JSON.parse((await runCli(['decode', '--file', pcapng, '--json'])).out);
    assert.deepEqual(ng.map((e) => e.message && [e.message.type, e.message.invokeId]), entries.map((e) => e.message && [e.message.type, e.message.invokeId]));
  });

  it('a DES-encrypted session is readable with --des-key, from its OPEN_REQ on', async () => {
    const pcap = path.join(tmpDir(), 'des.pcap');
    await capture(pcap, { desKey: KEY });
    const clear = await runCli(['decode', '--file', pcap, '--des-key', KEY]);
    assert.equal(clear.code, 0, clear.err);
    assert.match(clear.out, /QUERY_REQ id=\d+ .*subtype="echo" vars=\{"1":"v\d+"\}/);
    assert.match(clear.out, /QUERY_RESP id=\d+ E_AG_NO_ERROR vars=\{"1":"v\d+"\}/);
    const opaque = await runCli(['decode', '--file', pcap], { env: { GED145_DES_KEY: '' } });
    assert.ok(!/subtype="echo"/.test(opaque.out), 'without the key the fields stay encrypted');
  });

  it('a capture given as the argument, as people type it', async () => {
    const pcap = path.join(tmpDir(), 'arg.pcap');
    await capture(pcap);
    const r = await runCli(['decode', pcap]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /QUERY_REQ id=/);
  });

  it('a capture cut short, or a file with no message: one line, exit 1, no stack trace', async () => {
    const dir = tmpDir();
    const seven = path.join(dir, 'seven.pcap');
    fs.writeFileSync(seven, Buffer.from('d4c3b2a1020004', 'hex'));
    let r = await runCli(['decode', '--file', seven]);
    assert.deepEqual([r.code, r.err.trim()], [1, `ged145 decode: ${seven}: the pcap file header is cut short (24 bytes needed)`]);
    const noise = path.join(dir, 'noise.bin');
    fs.writeFileSync(noise, 'hello');
    r = await runCli(['decode', '--file', noise]);
    assert.equal(r.code, 1);
    assert.match(r.out, /5 bytes of an unfinished frame at the end/);
    assert.equal(r.err.trim(), 'ged145 decode: no GED-145 message found');
  });

  it('counts every byte of an unfinished frame, its header included', async () => {
    const r = await runCli(['decode', '000000040000000700000001', '000000100000000900000005']);
    assert.match(r.out, /! incomplete: 12 bytes of an unfinished frame at the end/);
  });

  it('an encrypted capture decoded without the key says so', async () => {
    const pcap = path.join(tmpDir(), 'des-nokey.pcap');
    await capture(pcap, { desKey: KEY });
    const r = await runCli(['decode', '--file', pcap], { env: { GED145_DES_KEY: '' } });
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, /1 session\(s\) in this capture are DES-encrypted: .* give --des-key KEY/);
  });

  it('refuses what is not hex with one line', async () => {
    const r = await runCli(['decode', 'zz']);
    assert.equal(r.code, 2);
    assert.match(r.err, /HEX must be hex digits/);
  });
});
