'use strict';

// Answer text outside ASCII (gateway/answer/charset.js, answers.charset): base letters instead of
// '?', one '?' per character that has none, Latin-1 bytes on a plain session when asked, ASCII on
// an encrypted one; checked alone, in the writer, and as bytes on a real socket.

const assert = require('node:assert/strict');
const {
  decodeFrame, DIRECTION, des, STATUS,
} = require('../../../lib/protocol');
const { toCharset, cutToConvert } = require('../../../gateway/answer/charset');
const { fillAnswer } = require('../../../gateway/answer/fit');
const { ReplyWriter } = require('../../../gateway/answer/writer');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');

const toRouter = (buf, cipher) => decodeFrame(buf, { direction: DIRECTION.HOST_TO_ROUTER, cipher });

describe('answer text: toCharset', () => {
  const cases = [
    // [input, ascii, latin1]
    ['José Müller', 'Jose Muller', 'José Müller'],
    ['株式会社', '????', '????'],
    ['Straße 5', 'Strasse 5', 'Straße 5'],
    ['Łódź', 'Lodz', 'Lódz'],
    ['Ærø, Øster, Œuvre', 'AEro, Oster, OEuvre', 'Ærø, Øster, OEuvre'],
    ['Đorđe', 'Dorde', 'Dorde'],
    ['O’Brien – Smith', "O'Brien - Smith", "O'Brien - Smith"],
    ['e\u0301te\u0301', 'ete', '\u00e9t\u00e9'], // decomposed accents: composed for Latin-1
    ['a\u{1F600}b', 'a?b', 'a?b'], // a surrogate pair is one character
    ['\u{1F44D}\u{1F3FD}!', '?!', '?!'], // an emoji with its skin tone modifier
    ['\u{1F468}\u200d\u{1F469}\u200d\u{1F467}', '?', '?'], // a family joined by ZWJs: one character
    ['한국', '??', '??'],
    ['\ud800x', '?x', '?x'], // a lone surrogate
    ['a\0b', 'a?b', 'a?b'],
    ['ﬁ①', 'fi1', 'fi1'],
  ];
  for (const [input, ascii, latin1] of cases) {
    it(`${JSON.stringify(input)} -> ${JSON.stringify(ascii)} (ascii), ${JSON.stringify(latin1)} (latin1)`, () => {
      assert.equal(toCharset(input), ascii);
      assert.equal(toCharset(input, 'latin1'), latin1);
    });
  }

  it('transliterate false: one ? per character outside the charset', () => {
    assert.equal(toCharset('José 株 \u{1F600}', 'ascii', false), 'Jos? ? ?');
    assert.equal(toCharset('José 株', 'latin1', false), 'José ?');
  });

  it('all-ASCII text is returned as it is', () => {
    const s = `plain ${'x'.repeat(100)}`;
    assert.equal(toCharset(s), s);
    assert.equal(toCharset(s, 'latin1'), s);
  });
});

describe('answer text: cut before it is converted (cutToConvert)', () => {
  it('8 UTF-16 units per byte of the limit, never half a surrogate pair; a short text is itself', () => {
    assert.equal(cutToConvert('abc', 255), 'abc');
    assert.equal(cutToConvert('\u00e9'.repeat(30_000), 255).length, 2040);
    const emoji = cutToConvert(`x${'\u{1F600}'.repeat(2000)}`, 255);
    assert.equal(emoji.length, 2039, 'the pair across the cut is left out whole');
    assert.equal(toCharset(emoji), `x${'?'.repeat(1019)}`);
  });
});

describe('answer text: fitted and written', () => {
  it('a value is cut to the tag limit after conversion, so no character is cut in two', () => {
    const resp = {};
    const notes = fillAnswer(resp, { vars: { 1: `${'x'.repeat(253)}\u{1F600}\u{1F600}`, 2: 'é'.repeat(300) } });
    assert.equal(resp.vars[1], `${'x'.repeat(253)}??`);
    assert.equal(resp.vars[2], 'e'.repeat(255));
    assert.equal(notes.length, 3, notes.join('\n'));
  });

  it('latin1: Latin-1 characters are one byte each on a plain session; an encrypted one gets ASCII', () => {
    const text = { charset: 'latin1', transliterate: true };
    const answer = { vars: { 1: 'José Müller', 2: '株式会社' }, ecc: { 'user.city': 'Zürich' } };
    const plain = new ReplyWriter({ maxBody: 8192 });
    const { buf } = plain.queryResp({ invokeId: 3 }, answer, text);
    assert.ok(buf.includes(Buffer.from('Jos\xe9 M\xfcller', 'latin1')), buf.toString('hex'));
    assert.ok(buf.includes(Buffer.from('user.city\0Z\xfcrich\0', 'latin1')));
    assert.ok(buf.includes(Buffer.from('????')));
    assert.deepEqual(toRouter(buf).vars, { 1: 'José Müller', 2: '????' });

    const cipher = des.createSessionCipher(Buffer.from('12345678'));
    const encrypted = new ReplyWriter({ maxBody: 8192 });
    encrypted.setCipher(cipher);
    const m = toRouter(encrypted.queryResp({ invokeId: 4 }, answer, text).buf, cipher);
    assert.deepEqual(m.vars, { 1: 'Jose Muller', 2: '????' });
    assert.deepEqual(m.ecc, { 'user.city': 'Zurich' });
  });
});

describe('answer text over a real session', () => {
  let backend;
  before(async () => {
    backend = await startTestBackend((req, res) => {
      res.setHeader('content-type', 'application/json; charset=utf-8');
      if (req.url.endsWith('/missing')) {
        res.statusCode = 404;
        res.end(JSON.stringify({ error: 'Kundin Zoë nicht gefunden' }));
        return;
      }
      res.end(JSON.stringify({ vars: { 1: 'José Müller', 2: '株式会社', 3: 'a\u{1F600}b' }, ecc: { 'user.city': 'Zürich' } }));
    });
  });
  after(() => backend.close());

  /** The raw bytes of one QUERY_RESP or FAILURE_CONF the gateway wrote, and the message decoded from them. */
  async function ask(answers, subtype) {
    const stack = await startStack({ backendUrl: backend.url, gateway: answers === null ? {} : { answers } });
    const client = await WireClient.connect(stack.port);
    const chunks = [];
    client.socket.on('data', (c) => chunks.push(c));
    try {
      await client.open();
      client.query(7, { subtype });
      const m = await client.waitFor((x) => x.invokeId === 7);
      return { m, bytes: Buffer.concat(chunks) };
    } finally {
      client.close();
      await stack.stop();
    }
  }

  it('by default: "José Müller" -> "Jose Muller", "株式会社" -> "????", one ? for an emoji', async () => {
    const { m, bytes } = await ask(null, 'cust');
    assert.equal(m.status, 0);
    assert.deepEqual(m.vars, { 1: 'Jose Muller', 2: '????', 3: 'a?b' });
    assert.deepEqual(m.ecc, { 'user.city': 'Zurich' });
    assert.ok(bytes.includes(Buffer.from('Jose Muller')));
    assert.ok(!bytes.some((b) => b >= 0x80), 'every byte is ASCII');
  });

  it('answers.charset latin1: é and ü are the bytes 0xE9 and 0xFC on the wire', async () => {
    const { m, bytes } = await ask({ charset: 'latin1' }, 'cust');
    assert.equal(m.status, 0);
    assert.ok(bytes.includes(Buffer.from([0x4a, 0x6f, 0x73, 0xe9, 0x20, 0x4d, 0xfc, 0x6c, 0x6c, 0x65, 0x72])), bytes.toString('hex')); // "Jos\xe9 M\xfcller"
    assert.ok(bytes.includes(Buffer.from('Z\xfcrich\0', 'latin1')));
    assert.deepEqual(m.vars, { 1: 'José Müller', 2: '????', 3: 'a?b' });
  });

  it('the ERROR text of an app_error gets base letters too', async () => {
    const { m } = await ask(null, 'missing');
    assert.equal(m.status, STATUS.E_AG_HOST_ERROR2);
    assert.equal(m.error, 'Kundin Zoe nicht gefunden');
  });
});
