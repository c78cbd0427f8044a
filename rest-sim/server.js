'use strict';

// Runs the REST simulator on a port (0 = any free port) and gives back the port and a close().

const http = require('node:http');
const { createRestSim } = require('./app');

async function startRestSim({ port = 3000, host = '127.0.0.1', ...options } = {}) {
  const { app, state } = createRestSim(options);
  const server = http.createServer({ keepAliveTimeout: 65_000 }, app);
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    server,
    state,
    host,
    port: address.port,
    url: `http://${host}:${address.port}`,
    close() {
      for (const res of state.hanging) res.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

module.exports = { startRestSim };
