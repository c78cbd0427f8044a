'use strict';

// DES field encryption: the des-ede trick against the published single-DES vector, and the
// encrypted message vectors (made with OpenSSL's own single DES by make-des-vectors.sh).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  des, decode, decodeFrame, serialize, EncodeError, DIRECTION,
} = require('../../lib/protocol');

const V = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'des-vectors.json'), 'utf8'));
const privateKey = Buffer.from(V.privateKey, 'hex');
const sessionKey = Buffer.from(V.sessionKey, 'hex');
const cipher = des.createSessionCipher(sessionKey);
const enc = cipher;
const bytes = (v) => Buffer.from(v.hex, 'hex');
const frameOf = (b, direction, cipher) => decodeFrame(b, { direction, cipher });

describe('DES field encryption', () => {
  it('des-ede-ecb with K||K is single DES: 133457799BBCDFF1 / 0123456789ABCDEF -> 85E813540F0AB405', () => {
    const key = Buffer.from('133457799BBCDFF1', 'hex');
    assert.equal(des.desEncrypt(key, Buffer.from('0123456789ABCDEF', 'hex')).toString('hex'), '85e813540f0ab405');
    assert.equal(des.desDecrypt(key, Buffer.from('85E813540F0AB405', 'hex')).toString('hex'), '0123456789abcdef');
  });

  it('parses a key as 16 hex digits or 8 ASCII characters, and refuses anything else', () => {
    assert.deepEqual(des.parseKey('3132333435363738'), Buffer.from('12345678'));
    assert.deepEqual(des.parseKey('12345678'), Buffer.from('12345678'));
    for (const bad of ['1234567', '123456789', '31323334353637', '\u00e912345678'.slice(0, 8)]) assert.throws(() => des.parseKey(bad), RangeError);
  });

  it('opens the SESSION_KEY of the OPEN_REQ vector and refuses one whose halves differ', () => {
    const open = frameOf(bytes(V.openReq), DIRECTION.ROUTER_TO_HOST);
    assert.equal(open.encryption, 1);
    assert.equal(open.config, 'lab');
    assert.deepEqual(des.openSessionKey(privateKey, open.sessionKey), sessionKey);
    assert.deepEqual(des.sealSessionKey(privateKey, sessionKey), open.sessionKey);
    assert.equal(des.openSessionKey(privateKey, frameOf(bytes(V.openReqBadKey), DIRECTION.ROUTER_TO_HOST).sessionKey), null);
    // In ECB, K||K encrypts to two equal blocks, which decrypt to two equal halves under ANY key:
    // the check catches a corrupted SESSION_KEY, not a different private key. A host with the
    // wrong key gets a wrong K, and every field then fails to decrypt to ASCII (ignored, logged).
    const wrongK = des.openSessionKey(Buffer.from('87654321'), open.sessionKey);
    assert.notDeepEqual(wrongK, sessionKey);
    const dropped = [];
    const q = frameOf(bytes(V.queryReq), DIRECTION.ROUTER_TO_HOST, des.createSessionCipher(wrongK, { onDropped: (t) => dropped.push(t) }));
    assert.equal(q.subtype, undefined);
    assert.ok(dropped.length >= 3, `dropped ${dropped}`);
  });

  it('decodes the encrypted QUERY_REQ, QUERY_RESP and FAILURE_CONF vectors', () => {
    const q = frameOf(bytes(V.queryReq), DIRECTION.ROUTER_TO_HOST, cipher);
    for (const [key, value] of Object.entries(V.queryReq.fields)) assert.deepEqual(q[key], value, key);
    const r = frameOf(bytes(V.queryResp), DIRECTION.HOST_TO_ROUTER, cipher);
    for (const [key, value] of Object.entries(V.queryResp.fields)) assert.deepEqual(r[key], value, key);
    const f = frameOf(bytes(V.failureConf), DIRECTION.HOST_TO_ROUTER, cipher);
    for (const [key, value] of Object.entries(V.failureConf.fields)) assert.deepEqual(f[key], value, key);
  });

  it('encodes them back to the same bytes', () => {
    assert.equal(serialize.queryReq(V.queryReq.fields, { nul: true, cipher: enc }).toString('hex'), V.queryReq.hex);
    assert.equal(serialize.queryResp(V.queryResp.fields, { cipher: enc }).toString('hex'), V.queryResp.hex);
    const f = V.failureConf.fields;
    assert.equal(serialize.failureConf(f.invokeId, f.status, f.error, { cipher: enc }).toString('hex'), V.failureConf.hex);
  });

  it('an encrypted field holds at most 248 bytes (padded to 256 it would not fit a tag)', () => {
    serialize.queryResp({ invokeId: 1, vars: { 1: 'x'.repeat(248) } }, { cipher: enc });
    assert.throws(
      () => serialize.queryResp({ invokeId: 1, vars: { 1: 'x'.repeat(249) } }, { cipher: enc }),
      (e) => e instanceof EncodeError && e.code === 'ERR_GED145_ENCODE_TAG_TOO_LONG'
    );
  });

  it('ignores a field that is not whole blocks or not ASCII once decrypted, and keeps the rest', () => {
    const dropped = [];
    const c = des.createSessionCipher(sessionKey, { onDropped: (tag, why) => dropped.push([tag, why]) });
    const good = cipher.encryptField(Buffer.from('echo'));
    const notAscii = cipher.encryptField(Buffer.from([0xc3, 0xa9, 0x41]));
    const body = Buffer.concat([
      Buffer.from('00000009000000010000000200', 'hex'),
      Buffer.from([3, good.length]), good,
      Buffer.from([5, 5]), Buffer.from('12345'),
      Buffer.from([9, notAscii.length]), notAscii,
    ]);
    const q = decode(9, body, DIRECTION.ROUTER_TO_HOST, c);
    assert.equal(q.subtype, 'echo');
    assert.equal(q.clid, undefined);
    assert.equal(q.vars, undefined);
    assert.deepEqual(dropped.map((d) => d[0]), [5, 9]);
  });

  it('ignores an ECC or ECC_ARRAY field that decrypts to ASCII but not to name NUL value NUL, as one that does not decrypt (a plain one is refused)', () => {
    const heard = [];
    const c = des.createSessionCipher(sessionKey, {
      onDropped: (tag, why) => heard.push(['dropped', tag, why]),
      onDecrypted: (tag) => heard.push(['decrypted', tag]),
    });
    // ASCII noise, as a block of another key's plaintext is once in 256: a whole block, no NUL in it.
    const noise = Buffer.from('k#9!q:Lz');
    const tag = (id, data) => Buffer.concat([Buffer.from([id, data.length]), data]);
    const body = Buffer.concat([
      Buffer.from('00000009000000010000000200', 'hex'),
      tag(3, cipher.encryptField(Buffer.from('echo'))),
      tag(20, cipher.encryptField(noise)),
      tag(21, cipher.encryptField(Buffer.concat([Buffer.from([2]), noise, noise.subarray(1)]))), // whole blocks: no NUL at all
      tag(20, cipher.encryptField(Buffer.from('user.acct\0A1\0'))),
    ]);
    const q = decode(9, body, DIRECTION.ROUTER_TO_HOST, c);
    assert.equal(q.subtype, 'echo');
    assert.deepEqual({ ...q.ecc }, { 'user.acct': 'A1' }, 'the well-formed ECC is kept');
    assert.equal(q.eccArrays, undefined);
    assert.deepEqual(heard, [
      ['decrypted', 3],
      ['dropped', 20, 'not name NUL value NUL after decryption'],
      ['dropped', 21, 'not name NUL value NUL after decryption'],
      ['decrypted', 20],
    ]);
    // The same noise in the clear is a malformed request: FAILURE_CONF E_AG_INVALID_MESSAGE, as before.
    const plain = Buffer.concat([Buffer.from('00000009000000010000000200', 'hex'), tag(3, Buffer.from('echo')), tag(20, noise)]);
    assert.throws(() => decode(9, plain, DIRECTION.ROUTER_TO_HOST), { code: 'ERR_GED145_BAD_ECC' });
  });
});
