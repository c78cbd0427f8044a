'use strict';

// A SOAP 1.1 CRM for tests, as enterprise CRMs speak it: POST text/xml envelopes to one endpoint
// with a SOAPAction header, answers in envelopes with namespace prefixes, and a "not found" as an
// HTTP 500 soap:Fault (SOAP 1.1 section 6.2). It reads the request with its own small parser,
// not the gateway's, and keeps every request for the tests to look at.
//
// Customers by phone number: KNOWN below. Phone numbers that ask for a misbehaviour:
//   5550000666  a 200 answer with a DOCTYPE that declares nested entities (a "billion laughs")
//   5550000502  an HTTP 500 with nginx's HTML error page instead of a fault
//   5550000999  an HTTP 500 fault with faultcode soap:Server (the CRM's own failure)

const http = require('node:http');

const ENVELOPE_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
const CRM_NS = 'urn:example:crm:v1';
const ACTION = '"urn:example:crm:v1#GetCustomer"';

const KNOWN = Object.freeze({
  5551000001: { id: 'C-1001', name: 'José Müller', tier: 'Gold', city: 'Zürich', balance: '1250.50' },
  5551000002: { id: 'C-1002', name: '株式会社 Example', tier: 'Silver', city: 'Tōkyō', balance: '0.00' },
  5551000003: { id: 'C-1003', name: 'Dana <Smith> & Sons', tier: 'Bronze', city: 'Leeds', balance: '-3.10' },
});

const escape = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** Character references for everything past ASCII: the gateway must decode them as it decodes UTF-8. */
const asReferences = (s) => escape(s).replace(/[^\x00-\x7f]/gu, (c) => `&#x${c.codePointAt(0).toString(16)};`);

const envelope = (body) => `<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope xmlns:soap="${ENVELOPE_NS}" `
  + `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soap:Body>${body}</soap:Body></soap:Envelope>`;

function customerXml(c, references) {
  const text = references ? asReferences : escape;
  return `<crm:GetCustomerResponse xmlns:crm="${CRM_NS}"><crm:customer id="${c.id}">`
    + `<crm:name>${text(c.name)}</crm:name><crm:tier>${c.tier}</crm:tier>`
    + `<crm:address><crm:city>${text(c.city)}</crm:city></crm:address>`
    + `<crm:balance currency="EUR">${c.balance}</crm:balance><crm:notes xsi:nil="true"/>`
    + '</crm:customer></crm:GetCustomerResponse>';
}

const fault = (code, text) => envelope(`<soap:Fault><faultcode>${code}</faultcode><faultstring>${escape(text)}</faultstring></soap:Fault>`);

const BOMB = '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
  + [...Array(9)].map((_, i) => ` <!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">\n`).join('')
  + ']>\n<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>'
  + '<crm:GetCustomerResponse xmlns:crm="urn:example:crm:v1"><crm:customer><crm:name>&lol9;</crm:name></crm:customer>'
  + '</crm:GetCustomerResponse></soap:Body></soap:Envelope>';

const NGINX_500 = '<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>\r\n'
  + '<center><h1>500 Internal Server Error</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';

/** The text of the first element named `local` (any prefix) in a request envelope, references decoded. */
function elementText(xml, local) {
  const m = new RegExp(`<(?:[\\w.-]+:)?${local}(?:\\s[^>]*)?>([^<]*)</(?:[\\w.-]+:)?${local}>`).exec(xml);
  if (m === null) return undefined;
  return m[1].replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}

/** Starts the CRM on 127.0.0.1, a free port: {url, port, requests, close()}. references: non-ASCII as &#x...; */
async function startSoapCrm({ references = false } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      requests.push({
        method: req.method, url: req.url, headers: req.headers, body,
      });
      const send = (status, xml, type = 'text/xml; charset=utf-8') => {
        res.writeHead(status, { 'content-type': type });
        res.end(xml);
      };
      if (req.method !== 'POST' || req.url !== '/crm/CustomerService') return send(404, '', 'text/plain');
      if (!/^text\/xml\b/.test(req.headers['content-type'] || '') || req.headers.soapaction !== ACTION) {
        return send(500, fault('soap:Client', 'expected text/xml and the GetCustomer SOAPAction'));
      }
      const phone = elementText(body, 'phone');
      if (phone === '5550000666') return send(200, BOMB);
      if (phone === '5550000502') return send(500, NGINX_500, 'text/html');
      if (phone === '5550000999') return send(500, fault('soap:Server', 'CRM database unavailable'));
      const c = Object.hasOwn(KNOWN, phone) ? KNOWN[phone] : undefined;
      if (c === undefined) return send(500, fault('soap:Client', `Customer ${phone} not found`));
      return send(200, envelope(customerXml(c, references)));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close() {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

module.exports = {
  startSoapCrm, elementText, KNOWN, ACTION, BOMB,
};
