'use strict';

// The admin HTTP port (express): / (the live status page), /status (its JSON), /health, /ready,
// /sessions, /metrics, /report/half-hour.csv (docs/reports.md), /report/shadow.csv (docs/safe-change.md).

const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const express = require('express');
const { listenError } = require('../../lib/errors');
const { LogThrottle } = require('../log-throttle');
const { statusPage } = require('./status-page');
const { halfHourCsv } = require('./half-hour');
const { shadowCsv } = require('./shadow-report');

/**
 * DNS rebinding: a web page an operator opens points its own name at this address, and the
 * browser, seeing one origin, lets the page read /status, /sessions and /metrics. Such a request
 * always names the attacker's host in Host. So the port answers only the names it serves: an IP
 * address (what a scraper or a probe uses, and no page's origin can be), localhost and *.localhost
 * (the browser resolves those itself), this machine's hostname, admin.host, and admin.hosts (a
 * name a reverse proxy or Prometheus uses; ".example.com": that name and its subdomains). A request
 * without Host (HTTP/1.0) comes from no browser and is answered. Anything else gets 421
 * Misdirected Request: this server does not answer for that authority.
 */
function servedNames({ host, hosts = [] }) {
  const names = new Set(['localhost', os.hostname().toLowerCase(), ...hosts.map((h) => h.toLowerCase())]);
  if (net.isIP(host) === 0) names.add(host.toLowerCase());
  const suffixes = [...names].filter((n) => n.startsWith('.'));
  for (const s of suffixes) names.add(s.slice(1)); // ".example.com" is example.com and its subdomains
  return (hostHeader) => {
    if (hostHeader === undefined) return true;
    let name = hostHeader.toLowerCase();
    if (name.startsWith('[')) return net.isIPv6(name.slice(1, name.indexOf(']'))); // [::1]:8080
    const colon = name.lastIndexOf(':');
    if (colon !== -1) name = name.slice(0, colon);
    if (name.endsWith('.')) name = name.slice(0, -1);
    if (net.isIPv4(name) || names.has(name) || name.endsWith('.localhost')) return true;
    return suffixes.some((s) => name.endsWith(s));
  };
}

function refuseOtherHosts(admin, log) {
  const served = servedNames(admin);
  const throttle = new LogThrottle();
  return (req, res, next) => {
    if (served(req.headers.host)) return next();
    const n = throttle.hit('host');
    if (n && log) {
      log.warn('admin request refused: its Host is not a name this port serves (add it to admin.hosts if it is yours)', {
        host: String(req.headers.host).slice(0, 100), path: req.path, count: n,
      });
    }
    return res.status(421).json({ error: 'misdirected request: this admin port does not serve that Host (admin.hosts)' });
  };
}

/**
 * createAdminApp({health(), notReady(), sessions(), metrics(), status(), reports()}) — each a
 * function, so the same app serves a single gateway or a cluster primary that asks its workers.
 */
function createAdminApp({
  health = () => ({}), notReady, sessions, metrics, status, reports = null, contentType = 'text/plain; version=0.0.4; charset=utf-8',
  admin = { host: '127.0.0.1', hosts: [] }, log = null,
}) {
  const app = express();
  app.disable('x-powered-by');
  app.use(refuseOtherHosts(admin, log));
  app.get('/', (req, res) => {
    // The page and everything it needs, from this host only: no script, style or font elsewhere.
    res.set('content-security-policy', "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:");
    res.type('html').send(statusPage());
  });
  app.get('/status', async (req, res, next) => {
    try {
      res.set('cache-control', 'no-store').json(await status());
    } catch (err) {
      next(err);
    }
  });
  app.get('/health', async (req, res, next) => {
    try {
      res.json({ status: 'ok', ...(await health()) });
    } catch (err) {
      next(err);
    }
  });
  app.get('/ready', (req, res) => {
    const why = notReady(); // null, or why queries cannot be answered now
    res.status(why === null ? 200 : 503).json(why === null ? { ready: true } : { ready: false, reason: why });
  });
  app.get('/sessions', async (req, res, next) => {
    try {
      res.json(await sessions());
    } catch (err) {
      next(err);
    }
  });
  app.get('/metrics', async (req, res, next) => {
    try {
      res.type(contentType).send(await metrics());
    } catch (err) {
      next(err);
    }
  });
  if (reports !== null) {
    app.get('/report/half-hour.csv', async (req, res, next) => {
      try {
        const csv = halfHourCsv((await reports()).halfHours);
        res.set('cache-control', 'no-store').set('content-disposition', 'inline; filename="ged145-half-hour.csv"');
        res.type('text/csv; charset=utf-8; header=present').send(csv);
      } catch (err) {
        next(err);
      }
    });
    app.get('/report/shadow.csv', async (req, res, next) => {
      try {
        const csv = shadowCsv((await reports()).shadow || { periods: [] });
        res.set('cache-control', 'no-store').set('content-disposition', 'inline; filename="ged145-shadow.csv"');
        res.type('text/csv; charset=utf-8; header=present').send(csv);
      } catch (err) {
        next(err);
      }
    });
  }
  app.use((req, res) => res.status(404).json({ error: 'not found' }));
  app.use((err, req, res, _next) => res.status(500).json({ error: err.message })); // express knows an error handler by its four arguments
  return app;
}

/**
 * The admin port of a gateway or a cluster primary: {host, port, hosts} from config.admin (port
 * null: none, and null is returned), sources as createAdminApp takes them. Logs where it listens;
 * resolves {port, close()}; a failed listen is an OperatorError naming the address.
 */
async function startAdmin(admin, log, sources) {
  const { host, port } = admin;
  if (port === null) return null;
  let server;
  try {
    server = await listenAdmin(createAdminApp({ ...sources, admin, log }), port, host);
  } catch (err) {
    throw listenError(err, host, port);
  }
  const bound = server.address().port;
  log.info(`admin on http://${host}:${bound} (status page at /; /status /health /ready /sessions /metrics /report/half-hour.csv /report/shadow.csv)`);
  return {
    port: bound,
    close() {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

function listenAdmin(app, port, host) {
  const server = http.createServer(app);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

module.exports = { startAdmin };
