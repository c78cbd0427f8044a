'use strict';

// Request body templates (config/body.js, backend/request.js fillBody): placeholder values escaped
// as the content type needs, so that any caller data reads back as itself and never changes the
// body's structure; what a route's settings may say about its body and its answer's format.

const assert = require('node:assert/strict');
const fc = require('fast-check');
const { compileBody } = require('../../../gateway/config/body');
const { fillBody, PlaceholderError } = require('../../../gateway/backend/request');
const { compileRoute } = require('../../../gateway/config/routes');
const { loadConfig } = require('../../../gateway/config');
const { STATUS } = require('../../../lib/protocol');
const { WireClient } = require('../../helpers/wire');
const { startStack, startTestBackend } = require('../../helpers/stack');
const { elementText } = require('../../helpers/soap-crm');

/** Characters XML 1.0 can carry. */
const XML_CHAR = /^[\t\n\r\x20-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]*$/u;

describe('body templates', () => {
  it('XML: any value XML can carry reads back as itself, inside its element and in an attribute', () => {
    const body = compileBody('<?xml version="1.0"?><r><v a="{vars.1}">{clid}</v><w>{dn}</w></r>');
    assert.equal(body.contentType, 'text/xml; charset=utf-8');
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (v) => {
      fc.pre(XML_CHAR.test(v));
      const xml = fillBody(body, { clid: v, dn: 'x', vars: { 1: v } });
      assert.equal(elementText(xml, 'v'), v);
      assert.equal(elementText(xml, 'w'), 'x');
      assert.equal(xml.split('<').length, '<?xml version="1.0"?><r><v a=""></v><w></w></r>'.split('<').length);
    }), { numRuns: 500 });
  });

  it('XML: a value with a character XML cannot carry refuses the query (PlaceholderError) instead of sending broken XML', () => {
    const body = compileBody('<r>{clid}</r>');
    for (const v of ['a\x01b', 'a\0', '\ud800', '\ufffe']) {
      assert.throws(() => fillBody(body, { clid: v }), (err) => err instanceof PlaceholderError && err.key === 'clid' && /XML text/.test(err.message));
    }
  });

  it('JSON template: placeholders in its strings, any value reads back as itself', () => {
    const body = compileBody({ customer: { phone: '{clid}', label: 'call to {dn}' }, n: 1 });
    assert.equal(body.contentType, 'application/json');
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (v) => {
      const json = JSON.parse(fillBody(body, { clid: v, dn: v }));
      assert.deepEqual(json, { customer: { phone: v, label: `call to ${v}` }, n: 1 });
    }), { numRuns: 500 });
  });

  it('a form: any value is one field', () => {
    const body = compileBody('phone={clid}&dn={dn}', { contentType: 'application/x-www-form-urlencoded' });
    fc.assert(fc.property(fc.string({ maxLength: 60 }), (v) => {
      const form = new URLSearchParams(fillBody(body, { clid: v, dn: 'x' }));
      assert.deepEqual([...form.keys()], ['phone', 'dn']);
      assert.equal(form.get('phone'), v);
    }), { numRuns: 300 });
  });

  it('text that is not XML is text/plain, an absent field is empty, and {name} must be a placeholder', () => {
    const body = compileBody('caller {clid} dialed {dn}');
    assert.equal(body.contentType, 'text/plain; charset=utf-8');
    assert.equal(fillBody(body, { clid: '42' }), 'caller 42 dialed ');
    assert.throws(() => compileBody('<r>{cild}</r>'), /unknown placeholder \{cild\}/);
    assert.equal(compileBody('query'), null);
    assert.equal(compileBody('none'), null);
  });
});

describe('a route\'s body and format settings', () => {
  const opts = { baseDir: '.', deadlineMs: 250, availability: loadConfig({ env: {} }).availability };
  const route = (r) => compileRoute({ url: 'http://h/x', ...r }, opts);

  it('a body template is posted unless the route names another method; a GET with one is refused', () => {
    assert.equal(route({ body: '<r/>' }).method, 'POST');
    assert.equal(route({ body: { a: '{clid}' }, method: 'PUT' }).method, 'PUT');
    assert.throws(() => route({ body: '<r/>', method: 'GET' }), /a GET sends no body/);
  });

  it('the content type and accept headers: the route\'s own, else the template\'s and the format\'s', () => {
    const soap = route({ body: '<r/>', format: 'xml', response: { 'vars.1': 'r.x' } });
    assert.deepEqual([soap.headers['content-type'], soap.headers.accept], ['text/xml; charset=utf-8', 'text/xml, application/soap+xml, application/xml']);
    assert.equal(soap.errorPath, 'Envelope.Body.Fault.faultstring');
    const own = route({ body: '<r>{clid}</r>', headers: { 'Content-Type': 'application/soap+xml; charset=utf-8' } });
    assert.equal(own.headers['content-type'], 'application/soap+xml; charset=utf-8');
    assert.equal(own.body.escaping, 'xml');
  });

  it('the schema: an XML answer needs a response mapping; a module route takes no format or body template', () => {
    const load = (r) => loadConfig({ env: {}, overrides: { routes: { x: r } } });
    assert.throws(() => load({ url: 'http://h/x', format: 'xml' }), /routes\.x needs a response mapping/);
    assert.throws(() => load({ url: 'http://h/x', format: 'yaml' }), /routes\.x\.format must be 'json' or 'xml'/);
    assert.throws(() => load({ module: 'x.js', format: 'xml' }), /unknown key 'format'/);
    assert.throws(() => load({ url: 'http://h/x', body: 7 }), /routes\.x\.body must be/);
    assert.equal(load({ url: 'http://h/x', body: '<r>{clid}</r>' }).compiledRoutes.get('x').method, 'POST');
  });
});

describe('body templates and XML answers through the gateway', () => {
  let backend;
  let stack;
  let client;
  let id = 1;
  before(async () => {
    backend = await startTestBackend((req, res, entry) => {
      if (req.url === '/big') {
        res.setHeader('content-type', 'text/xml');
        res.end(`<r><v>${'x'.repeat(70_000)}</v></r>`);
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ got: JSON.parse(entry.body) }));
    });
    stack = await startStack({
      backendUrl: backend.url,
      gateway: {
        routes: {
          json: { url: `${backend.url}/json`, body: { phone: '{clid}', v1: '{vars.1}' }, response: { 'vars.1': 'got.phone', 'vars.2': 'got.v1' } },
          big: { url: `${backend.url}/big`, body: '<q>{clid}</q>', format: 'xml', response: { 'vars.1': 'r.v' } },
          xmlOut: { url: `${backend.url}/json`, body: '<q>{clid}</q>', response: { 'vars.1': 'got' } },
        },
      },
    });
    client = await WireClient.connect(stack.port);
    await client.open();
  });
  after(async () => {
    client.close();
    await stack.stop();
    await backend.close();
  });
  const ask = async (fields) => {
    const invokeId = ++id;
    client.query(invokeId, fields);
    return client.waitFor((m) => m.invokeId === invokeId);
  };

  it('a JSON template is filled and posted; its answer is mapped as any JSON answer', async () => {
    const r = await ask({ subtype: 'json', clid: '555"}, "x": "1', vars: { 1: 'v' } });
    assert.equal(r.status, 0, JSON.stringify(r));
    assert.deepEqual(r.vars, { 1: '555"}, "x": "1', 2: 'v' });
    assert.equal(backend.requests.at(-1).headers['content-type'], 'application/json');
  });

  it('an XML answer over backend.maxResponseBytes is not read: E_AG_HOST_ERROR1, too large', async () => {
    const r = await ask({ subtype: 'big', clid: '1' });
    assert.equal(r.status, STATUS.E_AG_HOST_ERROR1);
    assert.match(r.error, /too large/);
  });

  it('a caller value XML cannot carry: E_AG_HOST_ERROR2 before the backend, nothing sent', async () => {
    const before = backend.requests.length;
    const r = await ask({ subtype: 'xmlOut', clid: 'a\x01b' });
    assert.equal(r.status, STATUS.E_AG_HOST_ERROR2);
    assert.match(r.error, /cannot be XML text/);
    assert.equal(backend.requests.length, before);
  });
});
