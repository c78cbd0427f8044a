'use strict';

// What a status means (gateway/backend/statuses.js), rule by rule, as a table.

const assert = require('node:assert/strict');
const {
  kindOf, statusMap, errorText, statusReason, UNAUTHORIZED,
} = require('../../../gateway/backend/statuses');

const NGINX_429 = '<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n'
  + '<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
const NGINX_400 = '<html>\r\n<head><title>400 No required SSL certificate was sent</title></head>\r\n<body>\r\n'
  + '<center><h1>400 Bad Request</h1></center>\r\n</body>\r\n</html>\r\n';
const plain = { statuses: null, errorPath: 'error' };
const mapped = { statuses: statusMap({ 404: 'ok', 409: 'ok', 410: 'host_error', 403: 'app_error', 500: 'app_error' }), errorPath: 'fault.text' };

describe('what a status means (unit)', () => {
  const table = [
    // [status, body, spec, kind, why]
    [200, '{}', plain, 'ok', 'b. 2xx'],
    [204, '', plain, 'ok', 'b. 2xx'],
    [404, '', plain, 'app_error', 'c. 404, whatever its body'],
    [404, NGINX_429, plain, 'app_error', 'c. 404, whatever its body'],
    [401, '{"error":"invalid_token"}', plain, UNAUTHORIZED, 'd. the gateway\'s credentials'],
    [403, '', plain, UNAUTHORIZED, 'd.'],
    [409, '{"error":"no such account"}', plain, 'app_error', 'e. the API\'s error at errorPath'],
    [422, '{"error":{"code":7,"message":"bad"}}', plain, 'app_error', 'e. an object counts'],
    [409, '{"detail":"x"}', plain, 'host_error', 'e. nothing at errorPath'],
    [409, '', plain, 'host_error', 'e. no body'],
    [400, NGINX_400, plain, 'host_error', 'f. a proxy\'s page'],
    [429, '{"error":"slow down"}', plain, 'host_error', 'f. 429 even with the API\'s error'],
    [408, '{"error":"timeout"}', plain, 'host_error', 'f. 408'],
    [429, NGINX_429, plain, 'host_error', 'f.'],
    [500, '{"error":"x"}', plain, 'host_error', 'f. 5xx'],
    [302, '', plain, 'host_error', 'f. 3xx'],
    [404, '', mapped, 'ok', 'a. statuses wins'],
    [410, '{"error":"gone"}', mapped, 'host_error', 'a.'],
    [403, '{"x":1}', mapped, 'app_error', 'a. mapped app_error, the API\'s JSON'],
    [403, '', mapped, 'app_error', 'a. mapped app_error, no body'],
    [403, NGINX_400, mapped, 'host_error', 'a. mapped app_error but a proxy\'s page'],
    [500, '<soap fault>', mapped, 'host_error', 'a. mapped app_error but not JSON (another format is one more branch in parseBody)'],
  ];
  for (const [status, body, spec, kind, why] of table) {
    it(`${status} ${body.slice(0, 24).replace(/\s+/g, ' ')} -> ${kind} (${why})`, () => {
      assert.equal(kindOf(status, body, spec), kind);
    });
  }

  it('the ERROR tag text: the API\'s error, a short plain line, never a page of markup', () => {
    assert.equal(errorText('{"error":"no customer"}', plain, 404), 'no customer');
    assert.equal(errorText('{"error":{"message":"no such account"}}', plain, 409), 'no such account');
    assert.equal(errorText('{"fault":{"text":"not found"}}', mapped, 403), 'not found');
    assert.equal(errorText('no such customer\n', plain, 404), 'no such customer');
    assert.equal(errorText(NGINX_429, plain, 404), 'backend HTTP 404');
    assert.equal(errorText('', plain, 404), 'backend HTTP 404');
  });

  it('host error reasons: rate_limited, request_timeout, http_NNN', () => {
    assert.deepEqual([429, 408, 400, 503].map(statusReason), ['rate_limited', 'request_timeout', 'http_400', 'http_503']);
  });
});
