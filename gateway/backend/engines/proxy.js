'use strict';

// A forward proxy between the gateway and its backends. For an https origin the connection is a
// CONNECT tunnel through the proxy and TLS inside it (the backend's certificate is checked as
// without a proxy); for an http origin the request goes to the proxy in absolute form
// (GET http://crm:8080/path), which every HTTP proxy takes, where many refuse CONNECT to ports other
// than 443. The settings come compiled from config/backend.js (compileProxy).

const http = require('node:http');
const buildConnector = require('./undici-parts').load('buildConnector'); // without undici's index (undici-parts.js)
const { ProxyError } = require('../errors');

/** The proxy URL for an origin ("https://crm.example:8443"), or null: NO_PROXY, or none configured. */
function proxyFor(proxy, origin) {
  if (proxy === null || proxy === undefined) return null;
  const u = new URL(origin);
  const url = u.protocol === 'https:' ? proxy.forHttps : proxy.forHttp;
  if (url === null) return null;
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  for (const entry of proxy.noProxy) {
    if (entry === '*') return null;
    const m = /^(.*?)(?::(\d+))?$/.exec(entry.replace(/^\[|\]$/g, ''));
    const name = m[1].replace(/^\*?\./, '');
    if (m[2] !== undefined && m[2] !== port) continue;
    if (host === name || host.endsWith(`.${name}`)) return null;
  }
  return url;
}

/** The proxy's Proxy-Authorization, from user:password in its URL, or undefined. */
function proxyAuthorization(u) {
  if (u.username === '') return undefined;
  return `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
}

/**
 * undici's `connect` option for an https origin reached through proxyUrl: a CONNECT tunnel, then
 * TLS to the origin over it with tlsOptions (undici's connector: its session cache reuses TLS
 * sessions, so a burst after an idle gap costs abbreviated handshakes).
 */
function tunnelConnector(proxyUrl, tlsOptions) {
  const proxy = new URL(proxyUrl);
  const tlsConnect = buildConnector({ ...tlsOptions });
  const auth = proxyAuthorization(proxy);
  return function connectThroughProxy(opts, callback) {
    const port = opts.port || 443;
    const req = http.request({
      host: proxy.hostname,
      port: proxy.port || 80,
      method: 'CONNECT',
      path: `${opts.hostname}:${port}`,
      headers: { host: `${opts.hostname}:${port}`, ...(auth ? { 'proxy-authorization': auth } : {}) },
      setHost: false,
      agent: false,
      lookup: tlsOptions.lookup, // the proxy's name, with the engine's time limit and cache
      timeout: opts.timeout || 10_000,
    });
    let done = false;
    const fail = (err) => {
      if (done) return;
      done = true;
      callback(err, null);
    };
    req.once('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        fail(new ProxyError(`proxy ${proxy.host} refused the tunnel to ${opts.hostname}:${port}: HTTP ${res.statusCode}`));
        return;
      }
      done = true;
      tlsConnect({ ...opts, httpSocket: socket }, callback);
    });
    req.once('timeout', () => req.destroy(Object.assign(new Error(`proxy ${proxy.host} did not answer CONNECT`), { code: 'UND_ERR_CONNECT_TIMEOUT' })));
    req.once('error', fail);
    req.end();
  };
}

module.exports = { proxyFor, tunnelConnector, proxyAuthorization };
