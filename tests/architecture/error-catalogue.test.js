'use strict';

// One error catalogue (lib/errors.js): every code of the product and every error class is
// defined there and nowhere else, read from the source of every product folder; each code is
// distinct and named after itself; each class carries a code of the catalogue.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const errors = require('../../lib/errors');

const ROOT = path.join(__dirname, '..', '..');
const CATALOGUE = path.join('lib', 'errors.js');
const PRODUCT = ['bin', 'gateway', 'lib', 'rest-sim', 'simulator', 'runner', 'tools'];

function sources(dir) {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(rel);
    return e.name.endsWith('.js') ? [rel] : [];
  });
}

/** [file, line] of every match of re in the product's sources, the catalogue left out. */
function outside(re) {
  const found = [];
  for (const file of PRODUCT.flatMap(sources)) {
    if (file === CATALOGUE) continue;
    fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
      if (re.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

describe('error catalogue (lib/errors.js)', () => {
  it('no module but the catalogue spells a code of ours', () => {
    assert.deepEqual(outside(/(['"`])ERR_GED145_[A-Z0-9_]*\1/), []);
  });

  it('no module but the catalogue defines an error class', () => {
    assert.deepEqual(outside(/class \w+ extends \w*Error\b/), []);
  });

  it('no module gives an error a code of its own making, only the system codes it stands in for', () => {
    // A code set by hand mimics what Node or undici would have said (EAI_AGAIN, UND_ERR_CONNECT_TIMEOUT),
    // so that one classification reads both.
    const own = outside(/\bcode(:\s*|\s*=\s*)(['"`])/).filter((l) => !/code(:\s*|\s*=\s*)'(E[A-Z_]+|UND_ERR_[A-Z_]+)'/.test(l));
    assert.deepEqual(own, []);
  });

  const TABLES = [[errors.CODES, ''], [errors.ERROR_CODES, ''], [errors.ENCODE_ERROR_CODES, 'ENCODE_']];
  const ALL = TABLES.flatMap(([table]) => Object.values(table));

  it('every code is distinct and named after itself', () => {
    assert.equal(new Set(ALL).size, ALL.length);
    for (const [table, part] of TABLES) {
      for (const [name, code] of Object.entries(table)) assert.equal(code, `${errors.PREFIX}${part}${name}`);
    }
  });

  it('every class carries a code of the catalogue, and a reason derived from it where it has one', () => {
    const made = [
      new errors.UsageError('x'), new errors.OperatorError('x'), new errors.ConfigError('x'), new errors.CaptureError('x'),
      new errors.ProtocolError(errors.ERROR_CODES.TAG_OVERRUN, 'x'), new errors.EncodeError(errors.ENCODE_ERROR_CODES.BAD_VAR, 'x'),
      new errors.DeadlineError(false), new errors.EngineError('reset', null), new errors.ProxyError('x'),
      new errors.AuthError('x', 'auth_failed'), new errors.PlaceholderError('clid', ''),
      new errors.BackendRequestError({ text: 'x', reason: 'reset' }), new errors.CaseFailure('x'), new errors.CaseSkipped('x'),
    ];
    const classes = Object.values(errors).filter((v) => typeof v === 'function' && v.prototype instanceof Error);
    assert.deepEqual(made.map((e) => e.constructor).sort(), classes.sort(), 'every class of the catalogue is checked here');
    for (const e of made) {
      assert.ok(ALL.includes(e.code), `${e.name}: ${e.code}`);
      assert.equal(e.name, e.constructor.name);
    }
    assert.equal(made[4].reason, 'tag_overrun');
    assert.equal(made[5].reason, 'encode_bad_var');
  });

  it('the codec names its errors from the catalogue', () => {
    const protocol = require('../../lib/protocol');
    assert.equal(protocol.ProtocolError, errors.ProtocolError);
    assert.equal(protocol.EncodeError, errors.EncodeError);
    assert.equal(protocol.ERROR_CODES, errors.ERROR_CODES);
  });
});
