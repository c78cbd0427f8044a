'use strict';

// A customer API set up the way enterprise APIs are, from real parts: a small token-and-customers
// service (OAuth2 client credentials, GET /customers?phone=..., 404 for an unknown caller) behind a
// real nginx (Debian's nginx-light) with TLS from a CA made here with openssl, keep-alive closed
// after `keepaliveTimeout` and after 100 requests; a real forward proxy (Debian's tinyproxy).
// Each starts on a free loopback port and is stopped by the test; files live in tmpDir().

const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const crypto = require('node:crypto');
const zlib = require('node:zlib');
const { spawn, execFileSync } = require('node:child_process');
const { once } = require('node:events');
const { tmpDir } = require('./tmp');

const CLIENT_ID = 'ged145';
const CLIENT_SECRET = 'tr0ub4dor&3-client-secret';
const KNOWN = /^555100\d{4}$/; // callers the API knows; any other number is a 404

const hasBinary = (name) => ['/usr/sbin', '/usr/bin', '/sbin', '/bin'].some((d) => fs.existsSync(path.join(d, name)));

async function freePort() {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** Resolves once something accepts TCP connections on port (or rejects after ms). */
async function waitForPort(port, ms = 10_000) {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The customers API and its token endpoint (plain HTTP on loopback; nginx puts TLS in front).
 * tokenLifetimeS: expires_in of each token; the API itself refuses a token past it, and counts
 * every expired token it was shown (expiredPresented), which must stay 0. gzip: every answer,
 * the token endpoint's too, gzip-compressed whatever the request's Accept-Encoding says (as some
 * APIs and their frameworks do).
 */
async function startCustomerApi({ tokenLifetimeS = 5, gzip = false } = {}) {
  const tokens = new Map(); // token -> expiresAt (ms)
  const stats = {
    tokenRequests: 0, tokenRefused: 0, lookups: 0, expiredPresented: 0, unknownToken: 0, noToken: 0,
  };
  let refuseClient = false;
  let refuseTokens = false; // the API answers 401 to every token, valid or not
  const lookupHeaders = []; // the headers of each GET /customers, in order (the first 10,000)
  const send = (res, status, body) => {
    if (gzip) {
      res.writeHead(status, { 'content-type': 'application/json', 'content-encoding': 'gzip', vary: 'accept-encoding' });
      res.end(zlib.gzipSync(JSON.stringify(body)));
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const url = new URL(req.url, 'http://x');
      if (req.method === 'POST' && url.pathname === '/oauth/token') {
        stats.tokenRequests++;
        const form = new URLSearchParams(body);
        const basic = /^Basic (.+)$/.exec(req.headers.authorization || '');
        const fromBasic = () => Buffer.from(basic[1], 'base64').toString().split(':').map(decodeURIComponent);
        const [id, secret] = basic ? fromBasic() : [form.get('client_id'), form.get('client_secret')];
        if (refuseClient || id !== CLIENT_ID || secret !== CLIENT_SECRET || form.get('grant_type') !== 'client_credentials') {
          stats.tokenRefused++;
          send(res, 401, { error: 'invalid_client', error_description: 'client authentication failed' });
          return;
        }
        const token = crypto.randomBytes(16).toString('hex');
        tokens.set(token, Date.now() + tokenLifetimeS * 1000);
        send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: tokenLifetimeS });
        return;
      }
      if (req.method === 'GET' && url.pathname === '/customers') {
        stats.lookups++;
        if (lookupHeaders.length < 10_000) lookupHeaders.push(req.headers);
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization || '');
        if (!bearer) {
          stats.noToken++;
          send(res, 401, { error: 'no token' });
          return;
        }
        const expiresAt = tokens.get(bearer[1]);
        if (refuseTokens) {
          send(res, 401, { error: 'insufficient_scope' });
          return;
        }
        if (expiresAt === undefined || Date.now() >= expiresAt) {
          if (expiresAt === undefined) stats.unknownToken++;
          else stats.expiredPresented++;
          send(res, 401, { error: 'invalid_token' });
          return;
        }
        const phone = url.searchParams.get('phone') || '';
        if (!KNOWN.test(phone)) {
          send(res, 404, { error: `no customer for ${phone}` });
          return;
        }
        send(res, 200, { customer: { tier: phone.endsWith('0') ? 'gold' : 'silver', agentGroup: `ag-${phone.slice(-2)}`, balance: 12.5 } });
        return;
      }
      send(res, 404, { error: 'not found' });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: server.address().port,
    stats,
    lookupHeaders,
    /** Every token issued so far is revoked: the API answers 401 to it. */
    revokeAll: () => tokens.clear(),
    refuseClient: (on = true) => { refuseClient = on; },
    refuseTokens: (on = true) => { refuseTokens = on; },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

/**
 * nginx in front of upstreamPort with TLS (cert and key from tests/helpers/certs.js), closing an
 * idle keep-alive connection after keepaliveTimeout and any connection after keepaliveRequests,
 * without a Keep-Alive header (as nginx does unless told otherwise). clientCa: a client
 * certificate signed by it is required (ssl_verify_client on; without one nginx answers its own
 * 400 page). gzip: nginx compresses every answer of any type and size for a client that accepts gzip.
 * http: directives for the http block (a limit_req_zone); locations: location blocks before the
 * catch-all `location /` (`proxy_pass http://api;` reaches the upstream).
 */
async function startNginx({
  upstreamPort, certs, keepaliveTimeout = '2s', keepaliveRequests = 100, tls = true, clientCa = null, gzip = false, http: httpExtra = '', locations = '',
}) {
  const dir = tmpDir('ged145-nginx-');
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  const running = process.getuid && process.getuid() === 0 ? 'user root;\n' : '';
  fs.writeFileSync(conf, `${running}worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream api { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  ${httpExtra}
  server {
    listen 127.0.0.1:${port}${tls ? ' ssl' : ''};
    server_name localhost;
    ${tls ? `ssl_certificate ${certs.serverCert};\n    ssl_certificate_key ${certs.serverKey};` : ''}
    ${clientCa ? `ssl_client_certificate ${clientCa};\n    ssl_verify_client on;` : ''}
    keepalive_timeout ${keepaliveTimeout};
    keepalive_requests ${keepaliveRequests};
    ${gzip ? 'gzip on;\n    gzip_types *;\n    gzip_min_length 1;\n    gzip_proxied any;' : ''}
    ${locations}
    location / {
      proxy_pass http://api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`);
  const child = spawn('nginx', ['-p', dir, '-c', conf, '-e', `${dir}/error.log`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = once(child, 'exit');
  await Promise.race([waitForPort(port), exited.then(() => { throw new Error(`nginx exited: ${err}`); })]);
  return {
    port,
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** tinyproxy on a free loopback port; `connects()` counts the CONNECT tunnels it opened, `requests()` every request. */
async function startTinyproxy() {
  const dir = tmpDir('ged145-tinyproxy-');
  const port = await freePort();
  const conf = path.join(dir, 'tinyproxy.conf');
  const log = path.join(dir, 'tinyproxy.log');
  const root = process.getuid && process.getuid() === 0;
  fs.writeFileSync(conf, `${root ? 'User nobody\nGroup nogroup\n' : ''}Port ${port}
Listen 127.0.0.1
Timeout 60
MaxClients 200
Allow 127.0.0.1
LogFile "${log}"
LogLevel Info
DisableViaHeader Yes
`);
  fs.writeFileSync(log, '');
  fs.chmodSync(dir, 0o777);
  fs.chmodSync(log, 0o666);
  const child = spawn('tinyproxy', ['-d', '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = once(child, 'exit');
  await Promise.race([waitForPort(port), exited.then(() => { throw new Error(`tinyproxy exited: ${err}`); })]);
  const count = (re) => (fs.readFileSync(log, 'utf8').match(re) || []).length;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    connects: () => count(/Request \(file descriptor \d+\): CONNECT /g),
    requests: () => count(/Request \(file descriptor \d+\): /g),
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** Whether this machine has what these tests need (.ci/run installs nginx-light and tinyproxy). */
function realPartsMissing() {
  const missing = ['nginx', 'tinyproxy', 'openssl'].filter((b) => !hasBinary(b));
  return missing.length === 0 ? null : missing;
}

/** openssl's own view of nginx: the certificate chain it serves verifies against ca. */
function opensslVerifies(port, ca) {
  const out = execFileSync('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-CAfile', ca, '-servername', 'localhost'], {
    input: '', stdio: ['pipe', 'pipe', 'pipe'], timeout: 10_000,
  }).toString();
  return /Verify return code: 0 \(ok\)/.test(out);
}

module.exports = {
  startCustomerApi, startNginx, startTinyproxy, freePort, realPartsMissing, opensslVerifies, CLIENT_ID, CLIENT_SECRET, KNOWN,
};

/**
 * A real gateway process (bin/ged145.js) on loopback with `config` written to a file in dir;
 * resolves {gw, port, adminPort, file, admin(path) -> {status, text, json}}.
 */
async function startGateway(config, { dir, env = {}, args = [] }) {
  // Required here, not at the top: tests/helpers/spawn.js loads the CLI's helpers.
  const { spawnCli } = require('./spawn');
  const file = path.join(dir, `gateway-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  const gw = spawnCli(['gateway', '--config', file, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--ready-json', ...args], { env });
  const { port, adminPort } = await gw.ready();
  const admin = async (p) => {
    const res = await fetch(`http://127.0.0.1:${adminPort}${p}`);
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) };
  };
  return {
    gw,
    port: Number(port),
    adminPort,
    file,
    admin,
    async stop() {
      gw.kill('SIGTERM');
      await gw.exited;
    },
  };
}

/**
 * The customer API as the tests meet it: a test CA and certificates, the client secret in a file
 * of dir, the API, and nginx with TLS in front of it (keep-alive 2 s / 100 requests).
 */
async function startRealApi({ tokenLifetimeS }) {
  const missing = realPartsMissing();
  if (missing !== null) throw new Error(`these tests need ${missing.join(', ')}: apt-get install nginx-light tinyproxy openssl (.ci/run does)`);
  const { makeCerts } = require('./certs');
  const certs = makeCerts();
  const dir = tmpDir('ged145-real-');
  fs.writeFileSync(path.join(dir, 'crm-client-secret'), `${CLIENT_SECRET}\n`);
  const api = await startCustomerApi({ tokenLifetimeS });
  const nginx = await startNginx({ upstreamPort: api.port, certs, keepaliveTimeout: '2s', keepaliveRequests: 100 });
  return {
    certs,
    dir,
    api,
    nginx,
    async close() {
      await nginx.close();
      await api.close();
      certs.cleanup();
    },
  };
}

/** Every 5th caller is unknown to the API (a 404); the others are known. */
const clidOf = (id) => (id % 5 === 0 ? `5559${String(id).padStart(6, '0')}` : `555100${String(id % 10_000).padStart(4, '0')}`);

/**
 * Sends n queries in one write (a burst) on a WireClient and waits for their replies; returns
 * one record per query: {id, clid, reply, latencyMs}. clidOf(id) gives each query's CLID.
 */
async function burst(client, { first, n, subtype = 'cust', clidOf }) {
  const { serialize } = require('../../lib/protocol');
  const { performance } = require('node:perf_hooks');
  const frames = [];
  const sent = new Map();
  for (let id = first; id < first + n; id++) {
    frames.push(serialize.queryReq({
      invokeId: id, routerCallDay: 1, routerCallKey: id, subtype, clid: clidOf(id),
    }, { nul: true }));
  }
  const before = client.messages.length;
  const at = performance.now();
  for (let id = first; id < first + n; id++) sent.set(id, at);
  client.send(Buffer.concat(frames));
  await client.waitForCount(before + n, 10_000);
  return client.messages.slice(before, before + n).map((m) => ({
    id: m.invokeId, clid: clidOf(m.invokeId), reply: m, latencyMs: m.receivedAt - sent.get(m.invokeId),
  }));
}

module.exports.startGateway = startGateway;
module.exports.startRealApi = startRealApi;
module.exports.clidOf = clidOf;
module.exports.burst = burst;

/**
 * Sends `rate` queries a second for durationMs on a WireClient (a few per 10 ms tick), then waits
 * for their replies; records as burst() returns them.
 */
async function rateRun(client, {
  first, rate, durationMs, subtype = 'cust', clidOf,
}) {
  const { performance } = require('node:perf_hooks');
  const total = Math.round((rate * durationMs) / 1000);
  const sent = new Map();
  const before = client.messages.length;
  const start = performance.now();
  let id = first;
  await new Promise((resolve) => {
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000));
      while (id - first < due) {
        sent.set(id, performance.now());
        client.query(id, { subtype, clid: clidOf(id) });
        id++;
      }
      if (id - first >= total) {
        clearInterval(tick);
        resolve();
      }
    }, 10);
  });
  await client.waitForCount(before + total, 10_000);
  return client.messages.slice(before, before + total).map((m) => ({
    id: m.invokeId, clid: clidOf(m.invokeId), reply: m, latencyMs: m.receivedAt - sent.get(m.invokeId),
  }));
}

module.exports.rateRun = rateRun;
