'use strict';

// A query's path reads in one direction: the session dispatches the query and keeps
// the handle the backend gives back (backend/handle.js); the backend calls the handle's handler
// with one outcome; the session turns it into a reply (session/reply.js, answer/). No module
// writes the other side's objects: read from the source, since a write is what makes two modules
// one. The session never touches a request's abort signal or substitutes (the handle's),
// and the backend side never writes the session's pending query (it only calls onOutcome on it).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');

function lines(dir) {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return lines(rel);
    if (!e.name.endsWith('.js')) return [];
    return fs.readFileSync(path.join(ROOT, rel), 'utf8').split('\n')
      .map((text, i) => ({ where: `${rel}:${i + 1}`, text: text.replace(/\/\/.*$/, '') }))
      .filter(({ text }) => !/^\s*\*|^\s*\/\*\*/.test(text)); // code, not comments
  });
}

const matching = (dir, re) => lines(dir).filter(({ text }) => re.test(text)).map(({ where, text }) => `${where}: ${text.trim()}`);

describe('a query\'s path reads in one direction', () => {
  it('session/ writes no field of a backend handle and never touches a request\'s signal', () => {
    assert.deepEqual(matching('gateway/session', /\.handle\.\w+\s*=[^=]|\.signal\b|\.stale\b|\.substitutes\b|abortReason|availability/), []);
  });

  it('session/ asks the backend through dispatch() and the handle only', () => {
    const calls = matching('gateway/session', /\bbackend\.\w+/).map((l) => l.match(/backend\.(\w+)/)[1]);
    assert.deepEqual([...new Set(calls)], ['dispatch']);
    const onHandle = matching('gateway/session', /\.handle\.\w+\(/).map((l) => l.match(/\.handle\.(\w+)\(/)[1]);
    assert.deepEqual([...new Set(onHandle)].sort(), ['abort', 'atDeadline']);
  });

  it('backend/ only calls its handler back, and never writes it', () => {
    assert.deepEqual(matching('gateway/backend', /handler\.\w+\s*=[^=]/), []);
    const uses = matching('gateway/backend', /\bthis\.handler\.\w+/).map((l) => l.match(/this\.handler\.(\w+)/)[1]);
    assert.deepEqual([...new Set(uses)], ['onOutcome']);
  });
});
