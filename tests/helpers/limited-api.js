'use strict';

// A customer API that says "slow down" the ways real ones do, from real parts: a small JSON API
// (GET /c/{clid}: 200 for a known caller, 404 {"error"} for another; a maintenance window of 503
// with Retry-After) behind a real nginx whose limit_req refuses what goes over `rate` a second:
//
//   /ra/...    429 with `Retry-After: 1` and a JSON body (an API gateway's rate limit)
//   /page/...  nginx's own 429 page (HTML, no Retry-After)
//   /bad...    nginx's own 400 page (HTML)
//   /...       the API as it is
//
// The API counts what reaches it (nginx's refusals never do), per second and per status.

const http = require('node:http');
const { once } = require('node:events');
const { startNginx, KNOWN } = require('./real-backend');

async function startLimitedApi() {
  const stats = {
    requests: 0, byStatus: {}, inMaintenance: 0, times: [],
  };
  let maintenanceUntil = 0;
  let retryAfterS = 5;
  const server = http.createServer((req, res) => {
    stats.requests++;
    stats.times.push(Date.now());
    const send = (status, body, headers = {}) => {
      stats.byStatus[status] = (stats.byStatus[status] || 0) + 1;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (Date.now() < maintenanceUntil) {
      stats.inMaintenance++;
      stats.byStatus[503] = (stats.byStatus[503] || 0) + 1;
      res.writeHead(503, { 'content-type': 'text/html', 'retry-after': String(retryAfterS) });
      res.end('<html><body><h1>Down for maintenance</h1>\r\n<p>Back soon.</p></body></html>\r\n');
      return;
    }
    const clid = decodeURIComponent(req.url.split('/').pop());
    if (!KNOWN.test(clid)) send(404, { error: `no customer for ${clid}` });
    else send(200, { customer: { tier: clid.endsWith('0') ? 'gold' : 'silver' } });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: server.address().port,
    url: `http://127.0.0.1:${server.address().port}`,
    stats,
    /** 503 with Retry-After: seconds for the next ms milliseconds. */
    maintenance(ms, seconds = 5) {
      maintenanceUntil = Date.now() + ms;
      retryAfterS = seconds;
    },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

/** nginx (plain HTTP) in front of api, limiting each of /ra/ and /page/ to `rate` requests a second (burst 10). */
function startLimitingNginx(api, { rate = 100 } = {}) {
  return startNginx({
    upstreamPort: api.port,
    tls: false,
    keepaliveTimeout: '60s',
    keepaliveRequests: 100_000,
    http: `limit_req_zone $server_name zone=ra:1m rate=${rate}r/s;
  limit_req_zone $server_name zone=page:1m rate=${rate}r/s;`,
    locations: `location /ra/ {
      limit_req zone=ra burst=10 nodelay;
      limit_req_status 429;
      error_page 429 = @limited;
      proxy_pass http://api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
    location @limited {
      add_header Retry-After 1 always;
      default_type application/json;
      return 429 '{"error": "rate limit exceeded"}';
    }
    location /page/ {
      limit_req zone=page burst=10 nodelay;
      limit_req_status 429;
      proxy_pass http://api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
    location /bad {
      return 400;
    }`,
  });
}

module.exports = { startLimitedApi, startLimitingNginx };
