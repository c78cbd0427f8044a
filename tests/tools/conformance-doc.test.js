'use strict';

// The conformance kit's case table against its documentation: docs/conformance.md lists every
// case as tools/conformance/doc.js generates it from the table, every requirement is quoted word
// for word from docs/protocol.md, and ids are unique and stable in form.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { CASES, LEVELS, NEEDS } = require('../../tools/conformance/cases');
const { casesMarkdown, DOC, BEGIN, END } = require('../../tools/conformance/doc');
const { SOURCES, MARKS } = require('../../tools/conformance/sources');

const PROTOCOL = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'protocol.md'), 'utf8');
const flat = (s) => s.replace(/\s+/g, ' ');

describe('the conformance case table', () => {
  it('docs/conformance.md lists exactly the cases of the table (node tools/conformance/doc.js rewrites it)', () => {
    const text = fs.readFileSync(DOC, 'utf8');
    const listed = text.slice(text.indexOf(BEGIN), text.indexOf(END) + END.length);
    assert.equal(listed, casesMarkdown());
    for (const c of CASES) assert.ok(listed.includes(`| \`${c.id}\` | ${c.level} |`), c.id);
  });

  it('the check fails when the doc and the table differ', () => {
    const text = fs.readFileSync(DOC, 'utf8');
    assert.notEqual(text.replace('`ged145/framing/1` | MUST', '`ged145/framing/1` | SHOULD').slice(text.indexOf(BEGIN)), casesMarkdown());
  });

  it('has 30 cases or more, unique ids of the form ged145/<area>/<n>, a level and a requirement quoted from docs/protocol.md', () => {
    assert.ok(CASES.length >= 30, `${CASES.length} cases`);
    assert.equal(new Set(CASES.map((c) => c.id)).size, CASES.length);
    for (const c of CASES) {
      assert.match(c.id, /^ged145\/[a-z]+\/[1-9]\d*$/);
      assert.ok(LEVELS.includes(c.level), c.id);
      assert.ok(flat(PROTOCOL).includes(flat(c.requirement)), `${c.id}: "${c.requirement}" is not in docs/protocol.md`);
      assert.ok(c.needs === undefined || Object.hasOwn(NEEDS, c.needs), c.id);
      assert.equal(typeof c.run, 'function');
    }
  });

  it('gives every case its source, marked as docs/protocol.md marks it: a MUST from Cisco or the field, a SHOULD our decision', () => {
    assert.deepEqual(Object.keys(SOURCES).sort(), CASES.map((c) => c.id).sort());
    for (const c of CASES) {
      const { mark, document } = SOURCES[c.id];
      assert.ok(document.length > 20, c.id);
      if (c.level === 'MUST') assert.ok(mark === MARKS.certain || mark === MARKS.field, `${c.id} is a MUST from ${mark}`);
      if (c.level === 'SHOULD') assert.equal(mark, MARKS.decided, c.id);
      if (mark === MARKS.certain) assert.match(document, /^Cisco/, c.id);
    }
  });

  it('numbers each area from 1 without a gap', () => {
    const byArea = new Map();
    for (const c of CASES) {
      const [, area, n] = c.id.split('/');
      byArea.set(area, [...(byArea.get(area) || []), Number(n)]);
    }
    for (const [area, ns] of byArea) assert.deepEqual(ns, ns.map((_, i) => i + 1), area);
  });
});
