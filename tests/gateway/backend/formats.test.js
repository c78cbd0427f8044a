'use strict';

// gateway/backend/formats.js alone: how JSON and XML answers are read, how their paths resolve,
// and what is refused (a DOCTYPE, an entity bomb, markup that is not XML, another root element).

const assert = require('node:assert/strict');
const {
  readBody, xmlFormat, xmlPath, jsonPath, compileFormat, NotInFormat, OverBudget, XML_BUDGETS, JSON_FORMAT,
} = require('../../../gateway/backend/formats');
const { BOMB } = require('../../helpers/soap-crm');

const SOAP = 'http://schemas.xmlsoap.org/soap/envelope/';
const envelope = (body, prefix = 'soap') => `<?xml version="1.0" encoding="utf-8"?>
<${prefix}:Envelope xmlns:${prefix}="${SOAP}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <${prefix}:Body>${body}</${prefix}:Body>
</${prefix}:Envelope>`;

const soap = xmlFormat('Envelope');

describe('XML answers', () => {
  const doc = readBody(soap, envelope(`<m:GetCustomerResponse xmlns:m="urn:crm">
    <m:customer id="C7">
      <m:name>Jos&#233; M&#xFC;ller &amp; Co &lt;GmbH&gt;</m:name>
      <m:tier>0042</m:tier>
      <m:phone>111</m:phone><m:phone>222</m:phone>
      <m:balance currency="EUR">12.50</m:balance>
      <m:notes xsi:nil="true"/>
      <m:empty/>
      <m:raw><![CDATA[a &amp; <b>]]></m:raw>
    </m:customer>
  </m:GetCustomerResponse>`));
  const at = (p) => xmlPath(doc, `Envelope.Body.GetCustomerResponse.customer${p}`);

  it('reads a SOAP envelope: prefixes ignored, text kept as text, references decoded, CDATA as written', () => {
    assert.ok(!(doc instanceof NotInFormat), doc.problem);
    assert.equal(at('.name'), 'José Müller & Co <GmbH>');
    assert.equal(at('.tier'), '0042');
    assert.equal(at('.raw'), 'a &amp; <b>');
  });

  it('paths: @attribute, [n] of a repeated element (the first without one), an element with attributes as its text', () => {
    assert.equal(at('.@id'), 'C7');
    assert.equal(at('.phone'), '111');
    assert.equal(at('.phone[1]'), '222');
    assert.equal(at('.phone[2]'), undefined);
    assert.equal(at('.balance'), '12.50');
    assert.equal(at('.balance.@currency'), 'EUR');
    assert.equal(xmlPath(doc, 'Envelope.Body.GetCustomerResponse[0].customer[0].tier'), '0042');
    assert.equal(xmlPath(doc, 'Envelope.Body.GetCustomerResponse.customer.tier[0]'), '0042');
  });

  it('xsi:nil and a missing element are no value; an empty element is empty text; an element with children stays an object', () => {
    assert.equal(at('.notes'), undefined);
    assert.equal(at('.nothing.here'), undefined);
    assert.equal(at('.empty'), '');
    assert.equal(typeof at(''), 'object');
  });

  it('a SOAP 1.1 and a SOAP 1.2 fault: the text at errorPath, and whether the server says it failed', () => {
    const f11 = (code) => readBody(soap, envelope(`<soap:Fault><faultcode>${code}</faultcode><faultstring>Customer not found</faultstring></soap:Fault>`));
    assert.equal(xmlPath(f11('soap:Client'), 'Envelope.Body.Fault.faultstring'), 'Customer not found');
    assert.equal(soap.serverFault(f11('soap:Client')), false);
    assert.equal(soap.serverFault(f11('soap:Server')), true);
    assert.equal(soap.serverFault(f11('Server.Database')), true);
    const f12 = (code) => readBody(soap, envelope(`<env:Fault><env:Code><env:Value>env:${code}</env:Value></env:Code>`
      + '<env:Reason><env:Text xml:lang="en">Nope</env:Text></env:Reason></env:Fault>', 'env'));
    assert.equal(xmlPath(f12('Sender'), 'Envelope.Body.Fault.Reason.Text'), 'Nope');
    assert.equal(soap.serverFault(f12('Sender')), false);
    assert.equal(soap.serverFault(f12('Receiver')), true);
    assert.equal(JSON_FORMAT.serverFault({}), false);
  });

  it('refuses a DOCTYPE without expanding anything: a billion laughs, an external entity', () => {
    const bomb = readBody(soap, BOMB); // 10^9 "lol"s if it were expanded
    assert.ok(bomb instanceof NotInFormat);
    assert.match(bomb.problem, /document type declaration/);
    const xxe = readBody(soap, '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><Envelope>&xxe;</Envelope>');
    assert.ok(xxe instanceof NotInFormat);
    // An entity that is only referenced, never declared, stays as it was written.
    assert.deepEqual(readBody(xmlFormat(), '<a>&nbsp;&lt;</a>'), { a: '&nbsp;<' });
  });

  it('refuses what is not one well-formed document with the expected root: bad_xml, not an answer', () => {
    const nginx = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n'
      + '<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
    for (const text of [nginx, 'Service Unavailable', '', '{"error": "x"}', '<a>1</a><b>2</b>', '<Envelope><Body></Envelope>']) {
      const r = readBody(soap, text);
      assert.ok(r instanceof NotInFormat, `${JSON.stringify(text)} was read`);
    }
    const xhtml = readBody(soap, '<html><body><p>Bad gateway</p></body></html>');
    assert.match(xhtml.problem, /root element is <html>, not <Envelope>/);
    assert.equal(soap.reason, 'bad_xml');
  });

  it('a character reference to a character XML does not allow becomes U+FFFD', () => {
    assert.deepEqual(readBody(xmlFormat(), '<a>x&#0;y&#xD800;z&#x1F600;</a>'), { a: 'x\ufffdy\ufffdz\u{1F600}' });
  });

  it('compileFormat: json by default; xml with the root its paths share, or none when they differ', () => {
    assert.equal(compileFormat(undefined, ['a.b']), JSON_FORMAT);
    assert.equal(compileFormat('xml', ['Envelope.Body.x', 'Envelope.Body.Fault.faultstring']).root, 'Envelope');
    assert.equal(compileFormat('xml', ['a.x', 'b.y']).root, null);
  });
});

describe('XML budgets (backend.xml): counted in one pass before the parser runs', () => {
  const small = { maxElements: 5, maxAttributes: 3, maxDepth: 3 };
  const read = (text, budgets = small) => readBody(xmlFormat(null, budgets), text);

  it('a document at each budget is read', () => {
    assert.deepEqual(read('<r><a/><a/><b x="1" y=\'2\'><c z="3"/></b></r>'), {
      r: { a: ['', ''], b: { '@x': '1', '@y': '2', c: { '@z': '3' } } },
    });
  });

  it('one element, attribute or level more is refused unread, naming the setting', () => {
    for (const [text, setting, problem] of [
      ['<r><a/><a/><a/><a/><a/></r>', 'backend.xml.maxElements', 'XML with more than 5 elements'],
      ['<r a="1" b="2"><c d="3" e="4"/></r>', 'backend.xml.maxAttributes', 'XML with more than 3 attributes'],
      ['<r><a><b><c/></b></a></r>', 'backend.xml.maxDepth', 'XML nested more than 3 elements deep'],
    ]) {
      const doc = read(text);
      assert.ok(doc instanceof OverBudget, text);
      assert.ok(doc instanceof NotInFormat);
      assert.equal(doc.setting, setting);
      assert.equal(doc.problem, problem);
    }
  });

  it('counts what the parser builds: not comments, CDATA, declarations, closing tags, nor "=" or ">" in values and text', () => {
    const text = '<?xml version="1.0"?><!-- <a/><a/><a/><a/> --><r q="a=b>c"><![CDATA[<x/><x/><x/><x/>]]><a>x=y</a><b/></r>';
    assert.deepEqual(read(text), { r: { '@q': 'a=b>c', '#text': '<x/><x/><x/><x/>', a: 'x=y', b: '' } });
  });

  it('the defaults let a SOAP envelope of 64 KB through, and refuse 64 KB of empty elements or of attributes', () => {
    const format = compileFormat('xml', ['Envelope.Body.x']);
    let items = '';
    while (items.length < 60_000) items += `<m:item><m:id>${items.length}</m:id><m:tier>gold</m:tier></m:item>`;
    assert.ok(!(readBody(format, envelope(`<m:R xmlns:m="urn:crm">${items}</m:R>`)) instanceof NotInFormat));
    assert.equal(readBody(format, `<Envelope>${'<a/>'.repeat(16_000)}</Envelope>`).setting, 'backend.xml.maxElements');
    let attrs = '';
    for (let i = 0; attrs.length < 64_000; i++) attrs += ` a${i}="1"`;
    assert.equal(readBody(format, `<Envelope${attrs}/>`).setting, 'backend.xml.maxAttributes');
    assert.equal(readBody(format, '<Envelope>'.repeat(9000) + '</Envelope>'.repeat(9000)).setting, 'backend.xml.maxDepth');
    assert.deepEqual(XML_BUDGETS, { maxElements: 4000, maxAttributes: 2000, maxDepth: 64 });
  });
});

describe('JSON answers', () => {
  it('an object is read; anything else says why not', () => {
    assert.deepEqual(readBody(JSON_FORMAT, '{"a": [1, {"b": 2}]}'), { a: [1, { b: 2 }] });
    assert.equal(readBody(JSON_FORMAT, '<html/>').problem, 'a body that is not JSON');
    assert.equal(readBody(JSON_FORMAT, '[1]').problem, 'JSON that is not an object');
    assert.equal(jsonPath({ a: [1, { b: 2 }] }, 'a[1].b'), 2);
  });
});
