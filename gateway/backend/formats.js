'use strict';

// How a route's answers are read: JSON (the REST contract, and a route by default) or XML (a SOAP
// or plain XML API: routes.<subtype>.format "xml"). readBody(format, text) is the one way a body
// is read in a route's format, for every use: the answer a 2xx maps, the text at errorPath, and
// whether a body is the API's own at all (a proxy's HTML page is not: its status then says
// nothing about the caller). A format also gives the path syntax its mappings are read with.
//
// XML is read by fast-xml-parser with no entity expansion: a body with a document type
// declaration is refused before the parser sees it (SOAP 1.1 section 3 and SOAP 1.2 part 1
// section 5 forbid one in a message, and a DTD is how entity bombs and external entity reads
// come in), and only XML's five predefined entities and character references are decoded, which
// can only make a text shorter. The body is already bounded by backend.maxResponseBytes.
//
// What parsing costs is bounded too (backend.xml): the parser spends microseconds per element and
// per attribute, so 64 KB of empty elements held the event loop for tens of milliseconds, and
// every other session's queries waited. One linear pass over the text first (xmlBudget) counts
// elements, attributes and depth, and stops at the first budget passed: such a body is refused
// unread, as XML not in the route's format. fast-xml-parser has no budgets of its own to enforce
// while it parses.

const { REASON } = require('./outcome');

/** Why a body is not in the route's format: a host error, never an answer about the caller. */
class NotInFormat {
  constructor(problem) {
    this.problem = problem;
  }
}

/** A body refused unread because parsing it would cost more than a budget allows; setting: the budget's name. */
class OverBudget extends NotInFormat {
  constructor(problem, setting) {
    super(problem);
    this.setting = setting;
  }
}

const NOT_JSON = new NotInFormat('a body that is not JSON');
const NOT_AN_OBJECT = new NotInFormat('JSON that is not an object');

/** "a.b[0].c" -> value in a parsed JSON answer, or undefined. */
function jsonPath(obj, p) {
  let o = obj;
  for (const key of p.replace(/\[(\d+)\]/g, '.$1').replace(/^\$\.?/, '').split('.')) {
    if (key === '') continue;
    if (o === null || typeof o !== 'object' || !Object.hasOwn(o, key)) return undefined;
    o = o[key];
  }
  return o;
}

function readJson(text) {
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
  return json === null || typeof json !== 'object' || Array.isArray(json) ? NOT_AN_OBJECT : json;
}

const JSON_FORMAT = Object.freeze({
  name: 'json', reason: REASON.BAD_JSON, read: readJson, path: jsonPath, errorInBody: true, serverFault: () => false,
});

// ---- XML ----------------------------------------------------------------------------------------

const PREDEFINED = Object.freeze({
  lt: '<', gt: '>', amp: '&', quot: '"', apos: "'",
});
const REFERENCE = /&(?:#x([0-9a-fA-F]{1,6})|#([0-9]{1,7})|(lt|gt|amp|quot|apos));/g;

/** A code point XML 1.0 allows (its production Char); a reference to any other is a U+FFFD. */
const isXmlChar = (c) => c === 0x9 || c === 0xa || c === 0xd || (c >= 0x20 && c <= 0xd7ff)
  || (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);

/**
 * fast-xml-parser's entity decoder (its `entityDecoder` option), in place of its own: the
 * predefined entities and character references, and nothing a document declares.
 */
const CHARACTER_REFERENCES = Object.freeze({
  decode(text) {
    if (!text.includes('&')) return text;
    return text.replace(REFERENCE, (m, hex, dec, name) => {
      if (name !== undefined) return PREDEFINED[name];
      const c = hex !== undefined ? parseInt(hex, 16) : Number(dec);
      return isXmlChar(c) ? String.fromCodePoint(c) : '\ufffd';
    });
  },
  addInputEntities(entities) {
    // Unreachable: readXml refuses every DOCTYPE first. Should one get through, its entities are refused, not used.
    if (entities && Object.keys(entities).length > 0) throw new Error('entity declarations are refused');
  },
  setExternalEntities() {},
  reset() {},
  setXmlVersion() {},
});

// Made at the first XML answer: most gateways never read one, and the parser's code costs idle memory.
let parser = null;
const XML_OPTIONS = {
  removeNSPrefix: true, // soap:Envelope and Envelope are one name: paths ignore namespace prefixes
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false, // text stays text: "0042" is a customer number, not 42
  parseAttributeValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  processEntities: true, // through CHARACTER_REFERENCES only
  entityDecoder: CHARACTER_REFERENCES,
};

/**
 * backend.xml as the schema defaults it (config/schema.js). A SOAP envelope that fills the default
 * backend.maxResponseBytes (64 KB) with short values holds about 2,500 elements, and an RPC/encoded
 * one with xsi:type on every element about 1,400 attributes; SOAP paths are rarely 20 deep. At
 * these budgets a parse costs at most about 20 ms (docs/performance.md, bench/hostile-answers.js).
 */
const XML_BUDGETS = Object.freeze({ maxElements: 4000, maxAttributes: 2000, maxDepth: 64 });

const GT = 0x3e; // >, and the other characters a tag is read by
const SLASH = 0x2f;
const BANG = 0x21;
const QUESTION = 0x3f;
const EQUALS = 0x3d;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;

/** Where the construct opened at i ("<!--", "<![CDATA[", "<!...", "<?") ends, or -1. */
function skipMarkup(text, i) {
  if (text.startsWith('<!--', i)) return endOf(text, '-->', i + 4);
  if (text.startsWith('<![CDATA[', i)) return endOf(text, ']]>', i + 9);
  if (text.charCodeAt(i + 1) === QUESTION) return endOf(text, '?>', i + 2);
  return endOf(text, '>', i + 2);
}

function endOf(text, close, from) {
  const at = text.indexOf(close, from);
  return at < 0 ? -1 : at + close.length;
}

/**
 * An OverBudget when text holds more elements, attributes or nesting than budgets allow, else
 * null: one pass, stopped at the first budget passed. Lenient: malformed text is the parser's to
 * refuse; this only counts what the parser would build. Text between tags is skipped with indexOf.
 */
function xmlBudget(text, { maxElements, maxAttributes, maxDepth }) {
  let elements = 0;
  let attributes = 0;
  let depth = 0;
  let i = text.indexOf('<');
  while (i >= 0 && i < text.length) {
    const next = text.charCodeAt(i + 1);
    if (next === BANG || next === QUESTION) {
      i = skipMarkup(text, i);
      if (i < 0) return null;
    } else if (next === SLASH) {
      depth--;
      i = endOf(text, '>', i + 2);
      if (i < 0) return null;
    } else {
      if (++elements > maxElements) return new OverBudget(`XML with more than ${maxElements} elements`, 'backend.xml.maxElements');
      // The tag: its '=' outside quoted values are its attributes; '/>' closes it at once.
      let j = i + 1;
      let c;
      for (; j < text.length; j++) {
        c = text.charCodeAt(j);
        if (c === GT) break;
        if (c === QUOTE || c === APOSTROPHE) {
          j = text.indexOf(c === QUOTE ? '"' : "'", j + 1);
          if (j < 0) return null;
        } else if (c === EQUALS && ++attributes > maxAttributes) {
          return new OverBudget(`XML with more than ${maxAttributes} attributes`, 'backend.xml.maxAttributes');
        }
      }
      if (j >= text.length) return null;
      if (depth >= maxDepth) return new OverBudget(`XML nested more than ${maxDepth} elements deep`, 'backend.xml.maxDepth');
      if (text.charCodeAt(j - 1) !== SLASH) depth++;
      i = j + 1;
    }
    i = text.indexOf('<', i);
  }
  return null;
}

const DOCTYPE = new NotInFormat('XML with a document type declaration (refused: entities are never expanded)');
const NOT_XML = new NotInFormat('a body that is not well-formed XML');

/**
 * text -> the document ({Root: ...}), or a NotInFormat; root: the element the route's paths start
 * at, or null; budgets: backend.xml.
 */
function readXml(text, root, budgets) {
  if (text.includes('<!DOCTYPE')) return DOCTYPE;
  const over = xmlBudget(text, budgets);
  if (over !== null) return over;
  let doc;
  try {
    if (parser === null) parser = new (require('fast-xml-parser').XMLParser)(XML_OPTIONS);
    doc = parser.parse(text, true); // true: well-formed or refused (the parser alone reads an HTML page too)
  } catch {
    return NOT_XML;
  }
  const names = Object.keys(doc);
  if (names.length !== 1) return NOT_XML;
  if (root !== null && names[0] !== root) return new NotInFormat(`XML whose root element is <${names[0].slice(0, 40)}>, not <${root}>`);
  return doc;
}

/**
 * "Envelope.Body.GetCustomerResponse.customer.tier" -> the element's text in a read document, or
 * undefined. Namespace prefixes are not written (they are gone); "@name" is an attribute;
 * "[n]" picks the n-th (from 0) of a repeated element, and a step without one takes the first,
 * so a path reads the same whether the API sent one element or several.
 */
function xmlPath(doc, p) {
  let o = doc;
  for (const key of p.replace(/\[(\d+)\]/g, '.$1').split('.')) {
    if (key === '') continue;
    const index = /^\d+$/.test(key) ? Number(key) : -1;
    if (Array.isArray(o)) {
      if (index >= 0) {
        o = o[index];
        continue;
      }
      o = o[0];
    } else if (index >= 0) {
      if (index > 0) return undefined;
      continue;
    }
    if (o === null || typeof o !== 'object' || !Object.hasOwn(o, key)) return undefined;
    o = o[key];
  }
  return xmlValue(Array.isArray(o) ? o[0] : o);
}

/** An element as a value: its text; xsi:nil="true" is no value; an element with children stays an object. */
function xmlValue(el) {
  if (el === null || typeof el !== 'object') return el;
  if (el['@nil'] === 'true') return undefined;
  if (Object.hasOwn(el, '#text')) return el['#text'];
  return Object.keys(el).every((k) => k.startsWith('@')) ? '' : el;
}

/**
 * Whether a document is a SOAP fault whose code says the server failed, not the request: SOAP 1.1
 * faultcode Server (or Server.something), SOAP 1.2 Code/Value Receiver. A CRM that answers
 * "customer not found" and "database down" both as HTTP 500 faults tells them apart this way.
 */
function serverFault(doc) {
  const code = xmlPath(doc, 'Envelope.Body.Fault.faultcode') ?? xmlPath(doc, 'Envelope.Body.Fault.Code.Value');
  if (typeof code !== 'string') return false;
  const local = code.trim().replace(/^[^:]*:/, '');
  return local === 'Server' || local.startsWith('Server.') || local === 'Receiver';
}

/**
 * The XML format for a route; root: the element its paths start at when they all start at one
 * (SOAP: Envelope); budgets: backend.xml ({maxElements, maxAttributes, maxDepth}).
 */
function xmlFormat(root = null, budgets = XML_BUDGETS) {
  return Object.freeze({
    name: 'xml', reason: REASON.BAD_XML, read: (text) => readXml(text, root, budgets), path: xmlPath, errorInBody: false, serverFault, root,
  });
}

/** A body in a format: the document read (an object), or a NotInFormat saying why it is not one. */
const readBody = (format, text) => format.read(text);

/**
 * The format a route's settings name ('json' when none), compiled once: paths are its mapping's
 * and errorPath's; budgets: backend.xml (the defaults when not given).
 */
function compileFormat(name, paths, budgets = XML_BUDGETS) {
  if (name !== 'xml') return JSON_FORMAT;
  const roots = new Set(paths.map((p) => p.replace(/\[\d+\]/g, '').split('.')[0]));
  return xmlFormat(roots.size === 1 ? [...roots][0] : null, { ...XML_BUDGETS, ...budgets });
}

module.exports = { JSON_FORMAT, NotInFormat, OverBudget, XML_BUDGETS, readBody, compileFormat, xmlFormat, jsonPath, xmlPath };
