'use strict';

// The admin HTTP port (express): / (the live status page), /status (its JSON), /health, /ready,
// /sessions, /metrics.

const http = require('node:http');
const express = require('express');
const { listenError } = require('../../lib/errors');
const { statusPage } = require('./status-page');

/**
 * createAdminApp({health(), notReady(), sessions(), metrics()}) — each a function, so the same app
 * serves a single gateway or a cluster primary that asks its workers.
 */
function createAdminApp({
  health = () => ({}), notReady, sessions, metrics, status, contentType = 'text/plain; version=0.0.4; charset=utf-8',
}) {
  const app = express();
  app.disable('x-powered-by');
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
  app.use((req, res) => res.status(404).json({ error: 'not found' }));
  app.use((err, req, res, _next) => res.status(500).json({ error: err.message })); // express knows an error handler by its four arguments
  return app;
}

/**
 * The admin port of a gateway or a cluster primary: {host, port} from config.admin (port null:
 * none, and null is returned), sources as createAdminApp takes them. Logs where it listens;
 * resolves {port, close()}; a failed listen is an OperatorError naming the address.
 */
async function startAdmin({ host, port }, log, sources) {
  if (port === null) return null;
  let server;
  try {
    server = await listenAdmin(createAdminApp(sources), port, host);
  } catch (err) {
    throw listenError(err, host, port);
  }
  const bound = server.address().port;
  log.info(`admin on http://${host}:${bound} (status page at /; /status /health /ready /sessions /metrics)`);
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

module.exports = { createAdminApp, startAdmin };
