'use strict';

// Backend answers shaped to cost the gateway as much as backend.maxResponseBytes lets them: long
// error texts outside ASCII (JSON and a SOAP fault), XML of many elements, many attributes or deep
// nesting, JSON deep and wide, many ECC arrays, and handler answers of 200,000 entries; beside a
// plain answer. One list for tests/gateway/answer/hostile-answers.test.js and
// bench/hostile-answers.js: each shape's route, the body a real HTTP backend serves for it, the
// query that asks for it, and the reply it must get.

const http = require('node:http');
const path = require('node:path');
const { STATUS } = require('../../lib/protocol');
const { XML_BUDGETS } = require('../../gateway/backend/formats');

const MANY_ENTRIES = path.join(__dirname, '..', 'fixtures', 'handlers', 'many-entries.js');
const SOAP_NS = 'http://schemas.xmlsoap.org/soap/envelope/';

/** Whole copies of unit that fit in `bytes` bytes of UTF-8 once wrapped in `overhead` bytes. */
const fill = (unit, bytes, overhead) => unit.repeat(Math.floor((bytes - overhead) / Buffer.byteLength(unit)));

const envelope = (body) => `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${SOAP_NS}"><soap:Body>${body}</soap:Body></soap:Envelope>`;

/** An XML route reading Envelope.Body.R.v into VAR1; a 500 is its API's "no" (SOAP faults). */
const xmlRoute = (url) => ({
  url, method: 'GET', format: 'xml', response: { 'vars.1': 'Envelope.Body.R.v' }, statuses: { 500: 'app_error' },
});

/**
 * The shapes for a backend answering on `url`, each body at most maxBytes:
 * {name, subtype, route (null: the default contract, POST /query/{subtype}), path, status,
 * contentType, body (a Buffer, or null for a handler route), fields (the query's), expect(reply)}.
 */
function hostileShapes(url, maxBytes = 65_536) {
  const json = 'application/json';
  const xml = 'text/xml; charset=utf-8';
  const slug = (name) => name.replace(/[^a-z0-9]+/gi, '-');
  const shape = (name, s) => ({
    name, subtype: `h.${slug(name)}`, route: null, path: `/query/h.${slug(name)}`, status: 200, contentType: json, fields: {}, ...s,
  });
  const xmlShape = (name, status, body, expect) => shape(name, {
    route: xmlRoute(`${url}/xml/${slug(name)}`), path: `/xml/${slug(name)}`, status, contentType: xml, body, expect,
  });
  const handler = (name, ced, expect) => shape(name, {
    subtype: 'h.entries', route: { module: MANY_ENTRIES }, path: null, body: null, fields: { ced }, expect,
  });

  const levels = Math.floor((maxBytes - 300) / 7);
  const deepElements = '<d>'.repeat(levels) + '</d>'.repeat(levels);
  let attributes = '';
  for (let i = 0; attributes.length < maxBytes - 300; i++) attributes += ` a${i}="1"`;
  let wide = '';
  for (let i = 0; wide.length < maxBytes - 200; i++) wide += `,"user.k${i}":"v"`;
  let arrays = '';
  for (let i = 0; arrays.length < maxBytes - 200; i++) arrays += `,{"name":"user.a","index":${i % 256},"value":"v${i}"}`;
  const depth = Math.floor((maxBytes - 100) / 2);

  const shapes = [
    shape('plain', { body: '{"vars":{"1":"plain"}}', expect: answered('plain') }),
    shape('error text accented', {
      status: 404, body: `{"error":"${fill('é', maxBytes, 16)}"}`, expect: failed(STATUS.E_AG_HOST_ERROR2, 'e'.repeat(255)),
    }),
    shape('error text emoji', {
      status: 404, body: `{"error":"${fill('\u{1F600}', maxBytes, 16)}"}`, expect: failed(STATUS.E_AG_HOST_ERROR2, '?'.repeat(255)),
    }),
    xmlShape('soap faultstring accented', 500, envelope(`<soap:Fault><faultcode>soap:Client</faultcode><faultstring>${
      fill('é', maxBytes, 400)}</faultstring></soap:Fault>`), failed(STATUS.E_AG_HOST_ERROR2, 'e'.repeat(255))),
    xmlShape('xml many elements', 200, envelope(`<R><v>x</v>${fill('<a/>', maxBytes, 300)}</R>`), failed(STATUS.E_AG_HOST_ERROR1)),
    xmlShape('xml many attributes', 200, envelope(`<R${attributes}><v>x</v></R>`), failed(STATUS.E_AG_HOST_ERROR1)),
    xmlShape('xml deep', 200, envelope(`<R><v>x</v>${deepElements}</R>`), failed(STATUS.E_AG_HOST_ERROR1)),
    // Just within each default budget (Envelope, Body, R and v are 4 elements; xmlns:soap 1 attribute; R is 3 deep):
    // the most a document the gateway parses can cost.
    xmlShape('xml at element budget', 200, envelope(`<R><v>x</v>${'<a/>'.repeat(XML_BUDGETS.maxElements - 4)}</R>`), answered('x')),
    xmlShape('xml at attribute budget', 200, envelope(`<R><v>x</v>${'<a b="1"/>'.repeat(XML_BUDGETS.maxAttributes - 1)}</R>`), answered('x')),
    xmlShape('xml at depth budget', 200, envelope(`<R><v>x</v>${'<d>'.repeat(XML_BUDGETS.maxDepth - 3)}${
      '</d>'.repeat(XML_BUDGETS.maxDepth - 3)}</R>`), answered('x')),
    shape('json deep', { body: `{"vars":{"1":"deep"},"x":${'['.repeat(depth)}${']'.repeat(depth)}}`, expect: answered('deep') }),
    shape('json wide', { body: `{"vars":{"1":"wide"},"ecc":{${wide.slice(1)}}}`, expect: answered('wide') }),
    shape('ecc arrays', { body: `{"vars":{"1":"arrays"},"eccArrays":[${arrays.slice(1)}]}`, expect: answered('arrays') }),
    handler('handler 200,000 ecc', 'ecc', answered('ecc')),
    handler('handler 200,000 eccArrays', 'eccArrays', answered('eccArrays')),
    handler('handler 200,000 vars keys', 'vars', answered('vars')),
  ];
  for (const s of shapes) {
    if (s.body !== null) s.body = Buffer.from(s.body);
    if (s.body !== null && s.body.length > maxBytes) throw new Error(`${s.name}: ${s.body.length} bytes, over ${maxBytes}`);
  }
  return shapes;
}

/** expect(reply) for a QUERY_RESP status 0 whose VAR1 is var1: null when it is, else what it is. */
function answered(var1) {
  return (r) => (r.type === 'QUERY_RESP' && r.status === 0 && r.vars && r.vars[1] === var1 ? null
    : `expected QUERY_RESP status 0 with VAR1 ${var1}, got ${r.type} ${r.status} ${JSON.stringify(r.vars || r.error)}`);
}

/** expect(reply) for a FAILURE_CONF of status (and, when given, exactly that ERROR text). */
function failed(status, error) {
  return (r) => (r.type === 'FAILURE_CONF' && r.status === status && (error === undefined || r.error === error) ? null
    : `expected FAILURE_CONF ${status}${error === undefined ? '' : ` "${error.slice(0, 10)}..."`}, got ${r.type} ${r.status} ${String(r.error).slice(0, 40)}`);
}

/** The gateway's routes for the shapes: the default contract's need none. */
function routesOf(shapes) {
  const routes = {};
  for (const s of shapes) if (s.route !== null) routes[s.subtype] = s.route;
  return routes;
}

/** A real HTTP backend on 127.0.0.1 serving each shape's body at its path: {url, close()}. */
async function startHostileBackend(maxBytes) {
  const byPath = new Map();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const s = byPath.get(req.url);
      if (s === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such shape"}');
        return;
      }
      res.writeHead(s.status, { 'content-type': s.contentType, 'content-length': s.body.length }).end(s.body);
    });
  });
  await new Promise((r) => { server.listen(0, '127.0.0.1', r); });
  const url = `http://127.0.0.1:${server.address().port}`;
  const shapes = hostileShapes(url, maxBytes);
  for (const s of shapes) if (s.path !== null) byPath.set(s.path, s);
  return {
    url,
    shapes,
    close() {
      server.closeAllConnections();
      return new Promise((r) => { server.close(r); });
    },
  };
}

module.exports = {
  hostileShapes, routesOf, startHostileBackend, MANY_ENTRIES,
};
