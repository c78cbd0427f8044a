'use strict';

// Compressed answers: both HTTP engines decode gzip, deflate (zlib and raw) and br against a real
// server, as the body arrives in pieces, with maxResponseBytes counted on the decoded bytes (a
// body that inflates to 1 GiB is too_large, with the heap's growth bounded); then a real gateway
// against an API that gzips every answer, its token endpoint's too, behind a real nginx with
// gzip on, and a route that asks nginx to compress. Before this, the undici engine took the
// compressed bytes for the answer: no token, or bad_json for every query.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const zlib = require('node:zlib');
const { createEngine, engineOptions, ACCEPT_ENCODING } = require('../../../../gateway/backend/engines');
const { DEFAULTS } = require('../../../../gateway/config');
const { startTestBackend } = require('../../../helpers/stack');
const { WireClient } = require('../../../helpers/wire');
const { makeCerts } = require('../../../helpers/certs');
const { tmpDir } = require('../../../helpers/tmp');
const {
  startCustomerApi, startNginx, startGateway, rateRun, clidOf, KNOWN, CLIENT_ID, CLIENT_SECRET,
} = require('../../../helpers/real-backend');
const { STATUS } = require('../../../../lib/protocol');

const OPTIONS = engineOptions(DEFAULTS.backend);
const ANSWER = JSON.stringify({ vars: { 1: 'Jos\u00e9 M\u00fcller' }, ecc: { 'user.note': 'x'.repeat(300) } });

const CODINGS = {
  gzip: (b) => zlib.gzipSync(b),
  'x-gzip': (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  'deflate (raw, as some servers send it)': (b) => zlib.deflateRawSync(b),
  br: (b) => zlib.brotliCompressSync(b),
};
const headerOf = (name) => name.split(' ')[0];

/** A gzip body of 1 GiB of zeros in about 1 MB: 1,024 members of 1 MiB each (RFC 1952 allows members in a row). */
function gzipBomb() {
  const member = zlib.gzipSync(Buffer.alloc(1 << 20));
  return Buffer.concat(new Array(1024).fill(member));
}

for (const name of ['undici', 'axios']) {
  describe(`${name} engine: compressed answers`, () => {
    let backend;
    let engine;
    let behaviour;

    beforeEach(async () => {
      behaviour = (req, res) => res.end('{}');
      backend = await startTestBackend((req, res, entry) => behaviour(req, res, entry));
    });

    afterEach(async () => {
      await engine.close();
      await backend.close();
    });

    const get = (method = 'GET') => engine.request({
      origin: backend.url, path: '/q', method, headers: { accept: 'application/json', 'accept-encoding': 'gzip, deflate, br' },
    });

    /** Answers body with Content-Encoding coding, in two pieces 20 ms apart. */
    const compressed = (coding, body, status = 200) => (req, res) => {
      res.writeHead(status, { 'content-type': 'application/json', 'content-encoding': coding });
      res.write(body.subarray(0, 5));
      setTimeout(() => res.end(body.subarray(5)), 20);
    };

    for (const [coding, encode] of Object.entries(CODINGS)) {
      it(`decodes ${coding}, a 404's body too`, async () => {
        engine = createEngine(name, OPTIONS);
        behaviour = compressed(headerOf(coding), encode(Buffer.from(ANSWER)));
        assert.deepEqual(await get(), { status: 200, text: ANSWER });
        behaviour = compressed(headerOf(coding).toUpperCase(), encode(Buffer.from('{"error":"no such caller"}')), 404);
        assert.deepEqual(await get(), { status: 404, text: '{"error":"no such caller"}' });
      });
    }

    it('takes identity as no coding, and an empty body with a coding (HEAD, 204) as empty', async () => {
      engine = createEngine(name, OPTIONS);
      behaviour = (req, res) => { res.writeHead(200, { 'content-encoding': 'identity' }); res.end(ANSWER); };
      assert.deepEqual(await get(), { status: 200, text: ANSWER });
      behaviour = (req, res) => { res.writeHead(204, { 'content-encoding': 'gzip' }); res.end(); };
      assert.deepEqual(await get(), { status: 204, text: '' });
      behaviour = (req, res) => { res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': '40' }); res.end(); };
      assert.deepEqual(await get('HEAD'), { status: 200, text: '' });
    });

    it('a body that inflates past maxResponseBytes is too_large (64 KiB: 10 MiB of zeros in 10 KB)', async () => {
      engine = createEngine(name, OPTIONS);
      const small = zlib.gzipSync(Buffer.alloc(10 << 20));
      assert.ok(small.length < OPTIONS.maxResponseBytes);
      behaviour = (req, res) => { res.writeHead(200, { 'content-encoding': 'gzip' }); res.end(small); };
      await assert.rejects(get(), { reason: 'too_large' });
      behaviour = (req, res) => res.end('{"after":true}');
      assert.deepEqual(await get(), { status: 200, text: '{"after":true}' }, 'the engine goes on');
    });

    it('a zip bomb (1 GiB of zeros in 1 MB) is too_large at a 2 MiB limit, and the heap grows by far less than a gigabyte', async function () {
      this.timeout(30_000);
      engine = createEngine(name, { ...OPTIONS, maxResponseBytes: 2 << 20 });
      const bomb = gzipBomb();
      assert.ok(bomb.length < 2 << 20, `${bomb.length} bytes on the wire`);
      behaviour = (req, res) => { res.writeHead(200, { 'content-encoding': 'gzip' }); res.end(bomb); };
      const used = () => { const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
      const before = used();
      let peak = before;
      const sample = setInterval(() => { peak = Math.max(peak, used()); }, 2);
      try {
        await assert.rejects(get(), { reason: 'too_large' });
      } finally {
        clearInterval(sample);
      }
      peak = Math.max(peak, used());
      assert.ok(peak - before < 128 << 20, `the heap grew by ${Math.round((peak - before) / 1048576)} MiB`);
    });

    it('a corrupt body is an error, and a coding the gateway does not decode names itself', async () => {
      engine = createEngine(name, OPTIONS);
      behaviour = (req, res) => { res.writeHead(200, { 'content-encoding': 'gzip' }); res.end('{"not": "gzip at all"}'); };
      await assert.rejects(get(), (err) => err.reason === 'error' && /^Z_/.test(err.detail));
      behaviour = (req, res) => { res.writeHead(200, { 'content-encoding': 'zstd' }); res.end('(zstd bytes)'); };
      await assert.rejects(get(), (err) => err.reason === 'error' && /Content-Encoding "zstd", which the gateway does not decode/.test(err.detail));
      behaviour = (req, res) => res.end('{"after":true}');
      assert.deepEqual(await get(), { status: 200, text: '{"after":true}' });
    });
  });
}

/**
 * One table of encodings x truncations, each row run against both engines with the same server:
 * what each engine makes of it (the answer, or the failure's reason and zlib's code) must be the
 * same, and the table's. A body cut short is never an answer: a coded stream that stops early
 * within a whole HTTP message is reason error (Z_BUF_ERROR), a connection that closes before the
 * body's end (Content-Length not reached, the last chunk missing) is reset, and neither is sent
 * again. Before, axios flushed whatever a cut gzip, deflate or br stream gave and answered with
 * it (a gzip body without its 8-byte trailer whole, half of one as a shorter text), and took an
 * identity body cut short for too_large.
 */
describe('both engines: one table of encodings x truncations, one classification', () => {
  const BODY = Buffer.from(JSON.stringify({ vars: { 1: 'Jos\u00e9' }, ecc: { 'user.note': 'x'.repeat(2000) } }));
  const ENCODINGS = { identity: (b) => b, ...CODINGS };
  const half = (b) => b.subarray(0, Math.floor(b.length / 2));
  const DECODE_CUT = { reason: 'error', zlib: 'Z_BUF_ERROR' };
  const RESET = { reason: 'reset' };

  /**
   * Each truncation: which encodings it applies to, the bytes sent for an encoded body, how they
   * are framed (whole: a complete HTTP message, chunked; close: the connection closes after them,
   * with Content-Length: the whole length, or chunked), and what both engines must make of it.
   */
  const TRUNCATIONS = [
    {
      what: 'whole', applies: () => true, bytes: (b) => b, framing: 'whole', expect: { status: 200, text: BODY.toString() },
    },
    {
      what: 'with a byte order mark first (RFC 8259 section 8.1: ignored)',
      applies: (e) => e === 'identity' || e === 'gzip',
      bom: true,
      bytes: (b) => b,
      framing: 'whole',
      expect: { status: 200, text: BODY.toString() },
    },
    {
      what: 'gzip missing its 8-byte trailer',
      applies: (e) => e === 'gzip' || e === 'x-gzip',
      bytes: (b) => b.subarray(0, b.length - 8),
      framing: 'whole',
      expect: DECODE_CUT,
    },
    {
      what: 'the coded stream cut mid-way, the HTTP message whole', applies: (e) => e !== 'identity', bytes: half, framing: 'whole', expect: DECODE_CUT,
    },
    {
      what: 'Content-Length longer than the body, then the connection closes', applies: () => true, bytes: half, framing: 'length', expect: RESET,
    },
    {
      what: 'chunked, the connection closes before the last chunk', applies: () => true, bytes: half, framing: 'chunked-cut', expect: RESET,
    },
  ];

  let backend;
  let behaviour;
  let requests;
  before(async () => {
    backend = await startTestBackend((req, res) => {
      requests++;
      behaviour(req, res);
    });
  });
  after(() => backend.close());

  /** Serves bytes as encoding says, framed as the truncation says: the first 5 bytes, the rest 20 ms later. */
  const serve = (encoding, bytes, t, full) => (req, res) => {
    const headers = { 'content-type': 'application/json' };
    if (encoding !== 'identity') headers['content-encoding'] = headerOf(encoding);
    if (t.framing === 'length') headers['content-length'] = String(full);
    res.writeHead(200, headers);
    res.write(bytes.subarray(0, 5));
    setTimeout(() => {
      if (t.framing === 'whole') {
        res.end(bytes.subarray(5));
        return;
      }
      res.write(bytes.subarray(5));
      setTimeout(() => res.socket.destroy(), 20); // no more bytes: neither the rest of the length nor the last chunk
    }, 20);
  };

  /** What an engine made of one request: the answer, or the failure's reason (and zlib's code). */
  async function outcome(engine) {
    try {
      return await engine.request({
        origin: backend.url, path: '/q', method: 'GET', headers: { accept: 'application/json' },
      });
    } catch (err) {
      return /^Z_/.test(err.detail) ? { reason: err.reason, zlib: err.detail } : { reason: err.reason };
    }
  }

  for (const t of TRUNCATIONS) {
    for (const [encoding, encode] of Object.entries(ENCODINGS)) {
      if (!t.applies(encoding)) continue;
      it(`${encoding}, ${t.what}: ${t.expect.reason === undefined ? 'answered' : t.expect.reason} on both, asked once`, async () => {
        const whole = encode(t.bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), BODY]) : BODY);
        behaviour = serve(encoding, t.bytes(whole), t, whole.length);
        const seen = {};
        for (const name of ['undici', 'axios']) {
          const engine = createEngine(name, OPTIONS);
          try {
            requests = 0;
            seen[name] = await outcome(engine);
            assert.equal(requests, 1, `${name}: a request whose answer had begun is never sent again`);
            behaviour = (req, res) => res.end('{"after":true}');
            assert.deepEqual(await engine.request({
              origin: backend.url, path: '/q', method: 'GET', headers: {},
            }), { status: 200, text: '{"after":true}' }, `${name} goes on`);
            behaviour = serve(encoding, t.bytes(whole), t, whole.length);
          } finally {
            await engine.close();
          }
        }
        assert.deepEqual(seen.axios, seen.undici, 'both engines alike');
        assert.deepEqual(seen.undici, t.expect);
      });
    }
  }
});

describe('a real gateway and compressed answers', function () {
  this.timeout(90_000);
  let certs;
  let dir;
  before(() => {
    certs = makeCerts();
    dir = tmpDir('ged145-gzip-');
  });
  after(() => certs.cleanup());

  const route = (base, extra = {}) => ({
    method: 'GET',
    url: `${base}/customers?phone={clid}`,
    response: { 'vars.1': 'customer.tier', 'vars.2': 'customer.agentGroup', 'ecc.user.balance': 'customer.balance' },
    ...extra,
  });
  const configFor = (base, engine, routeExtra) => ({
    backend: {
      url: base,
      engine,
      tls: { ca: certs.ca },
      auth: {
        type: 'oauth2', tokenUrl: `${base}/oauth/token`, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET,
      },
    },
    routes: { cust: route(base, routeExtra) },
  });

  /**
   * What went wrong: a known caller not answered with its tags, an unknown one not E_AG_HOST_ERROR2.
   * A query the machine's load made miss its deadline is counted apart (late): outcomes, not time.
   */
  function wrong(records) {
    const right = ({ clid, reply }) => (KNOWN.test(clid)
      ? reply.type === 'QUERY_RESP' && reply.vars[2] === `ag-${clid.slice(-2)}` && reply.ecc['user.balance'] === '12.5'
      : reply.type === 'FAILURE_CONF' && reply.status === STATUS.E_AG_HOST_ERROR2);
    const late = ({ reply }) => reply.type === 'FAILURE_CONF' && /did not answer within/.test(reply.error);
    assert.ok(records.some(right), `none answered, ${records.filter(late).length} of ${records.length} late`);
    return records.filter((r) => !right(r) && !late(r)).map((r) => [r.clid, r.reply.type, r.reply.status, r.reply.error]);
  }

  /** The Content-Encoding of nginx's answer (a 404 from the API, which nginx compresses as it does 200s) for a client that accepts gzip. */
  function encodingServed(port, ca) {
    return new Promise((resolve, reject) => {
      const req = https.get({
        host: '127.0.0.1', port, path: '/no-such-page', ca: fs.readFileSync(ca), headers: { 'accept-encoding': 'gzip' }, servername: 'localhost',
      }, (res) => {
        res.resume();
        resolve(res.headers['content-encoding']);
      });
      req.on('error', reject);
    });
  }

  /**
   * A gateway with config: once a first caller is answered (the token fetched, a TLS connection
   * open), 100 queries a second for 1 s; their records.
   */
  async function run(config) {
    const g = await startGateway(config, { dir });
    const client = await WireClient.connect(g.port);
    try {
      await client.open();
      for (let id = 1000; ; id++) {
        client.query(id, { subtype: 'cust', clid: '5551000010' });
        const reply = await client.waitFor((m) => m.invokeId === id);
        if (reply.type === 'QUERY_RESP' && reply.vars[1] === 'gold') break;
        assert.ok(id < 1010, `no caller answered in 10 tries: ${JSON.stringify(reply)}`);
      }
      return await rateRun(client, {
        first: 10, rate: 100, durationMs: 1000, clidOf,
      });
    } finally {
      client.close();
      await g.stop();
    }
  }

  for (const engine of ['undici', 'axios']) {
    it(`an API that gzips every answer, its token endpoint's too, behind nginx with gzip on: every caller answered (${engine})`, async () => {
      const api = await startCustomerApi({ gzip: true });
      const nginx = await startNginx({ upstreamPort: api.port, certs, gzip: true });
      try {
        const records = await run(configFor(nginx.url, engine));
        assert.deepEqual(wrong(records), []);
        assert.ok(api.stats.tokenRequests >= 1);
        // What the gateway asks for by default: answers as they are (content-encoding.js says why).
        assert.ok(api.lookupHeaders.every((h) => h['accept-encoding'] === ACCEPT_ENCODING), JSON.stringify(api.lookupHeaders[0]));
      } finally {
        await nginx.close();
        await api.close();
      }
    });
  }

  it('a route that asks for compression (Accept-Encoding in its headers) gets it from nginx, and every caller is answered', async () => {
    const api = await startCustomerApi();
    const nginx = await startNginx({ upstreamPort: api.port, certs, gzip: true });
    try {
      // nginx compresses a JSON answer for whoever asks, as the gateway's route now does.
      assert.equal(await encodingServed(nginx.port, certs.ca), 'gzip');
      const records = await run(configFor(nginx.url, 'undici', { headers: { 'Accept-Encoding': 'gzip, deflate, br' } }));
      assert.deepEqual(wrong(records), []);
      assert.ok(api.lookupHeaders.every((h) => /gzip/.test(h['accept-encoding'])), JSON.stringify(api.lookupHeaders[0]));
    } finally {
      await nginx.close();
      await api.close();
    }
  });
});
