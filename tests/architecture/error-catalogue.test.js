'use strict';

// Errors by layer, one catalogue each (undici's lib/core/errors.js, pg-protocol's errors): the
// codec's (lib/protocol/errors.js), the product's (lib/errors.js) and the backend's
// (gateway/backend/errors.js). Every code and every error class is defined in one of them and
// nowhere else, read from the source of every product folder; each code is defined once, named
// after itself, and spelled as it always was; each class is in its own layer's catalogue.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const codec = require('../../lib/protocol/errors');
const product = require('../../lib/errors');
const backend = require('../../gateway/backend/errors');

const ROOT = path.join(__dirname, '..', '..');
const PRODUCT = ['bin', 'gateway', 'lib', 'rest-sim', 'simulator', 'runner', 'tools'];

// Each catalogue: its file, its tables (with the part of a code between the prefix and the key),
// and one instance of every class it defines.
const CATALOGUES = [
  {
    file: path.join('lib', 'protocol', 'errors.js'),
    module: codec,
    tables: [[codec.ERROR_CODES, ''], [codec.ENCODE_ERROR_CODES, 'ENCODE_'], [codec.PROFILE_ERROR_CODES, 'PROFILE_']],
    made: [
      new codec.ProtocolError(codec.ERROR_CODES.TAG_OVERRUN, 'x'), new codec.EncodeError(codec.ENCODE_ERROR_CODES.BAD_VAR, 'x'),
      new codec.ProfileError(codec.PROFILE_ERROR_CODES.DUPLICATE, 'x'),
    ],
  },
  {
    file: path.join('lib', 'errors.js'),
    module: product,
    tables: [[product.CODES, '']],
    made: [
      new product.Ged145Error(product.CODES.OPERATOR, 'x'), new product.UsageError('x'), new product.OperatorError('x'),
      new product.ConfigError('x'), new product.CaptureError('x'), new product.CaseFailure('x'), new product.CaseSkipped('x'),
    ],
  },
  {
    file: path.join('gateway', 'backend', 'errors.js'),
    module: backend,
    tables: [[backend.CODES, '']],
    made: [
      new backend.DeadlineError(false), new backend.EngineError('reset', null), new backend.ProxyError('x'),
      new backend.AuthError('x', 'auth_failed'), new backend.PlaceholderError('clid', ''), new backend.BackendRequestError({ text: 'x', reason: 'reset' }),
    ],
  },
];
const FILES = CATALOGUES.map((c) => c.file);

// Every code of the product as operators, scripts and dashboards know it: a code may be added
// (here too), never renamed or removed.
const STABLE = {
  'lib/protocol/errors.js': [
    'ERR_GED145_FRAME_TOO_LARGE', 'ERR_GED145_UNKNOWN_TYPE', 'ERR_GED145_WRONG_DIRECTION', 'ERR_GED145_TRUNCATED',
    'ERR_GED145_TAG_OVERRUN', 'ERR_GED145_DANGLING_BYTE', 'ERR_GED145_BAD_ECC',
    'ERR_GED145_ENCODE_OUT_OF_RANGE', 'ERR_GED145_ENCODE_NOT_TEXT', 'ERR_GED145_ENCODE_NON_ASCII', 'ERR_GED145_ENCODE_TAG_TOO_LONG',
    'ERR_GED145_ENCODE_BAD_VAR', 'ERR_GED145_ENCODE_BAD_ECC', 'ERR_GED145_ENCODE_BAD_STATUS', 'ERR_GED145_ENCODE_UNKNOWN_TYPE',
    'ERR_GED145_PROFILE_UNKNOWN_NAME', 'ERR_GED145_PROFILE_OUT_OF_RANGE', 'ERR_GED145_PROFILE_DUPLICATE',
  ],
  'lib/errors.js': [
    'ERR_GED145_USAGE', 'ERR_GED145_OPERATOR', 'ERR_GED145_CONFIG', 'ERR_GED145_CAPTURE', 'ERR_GED145_CASE_FAILED', 'ERR_GED145_CASE_SKIPPED',
  ],
  'gateway/backend/errors.js': [
    'ERR_GED145_ENGINE', 'ERR_GED145_DEADLINE', 'ERR_GED145_PROXY', 'ERR_GED145_BACKEND', 'ERR_GED145_AUTH', 'ERR_GED145_PLACEHOLDER',
  ],
};

function sources(dir) {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(rel);
    return e.name.endsWith('.js') ? [rel] : [];
  });
}

/** [file, line] of every match of re in the product's sources, the catalogues left out. */
function outside(re) {
  const found = [];
  for (const file of PRODUCT.flatMap(sources)) {
    if (FILES.includes(file)) continue;
    fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
      if (re.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

const codesOf = (catalogue) => catalogue.tables.flatMap(([table]) => Object.values(table));
const classesOf = (module) => Object.values(module).filter((v) => typeof v === 'function' && v.prototype instanceof Error);

describe('error catalogues (lib/protocol/errors.js, lib/errors.js, gateway/backend/errors.js)', () => {
  it('no module but a catalogue spells a code of ours', () => {
    assert.deepEqual(outside(/(['"`])ERR_GED145_[A-Z0-9_]*\1/), []);
  });

  it('no module but a catalogue defines an error class', () => {
    assert.deepEqual(outside(/class \w+ extends \w*Error\b/), []);
  });

  it('no module gives an error a code of its own making, only the system codes it stands in for', () => {
    // A code set by hand mimics what Node or undici would have said (EAI_AGAIN, UND_ERR_CONNECT_TIMEOUT),
    // so that one classification reads both.
    const own = outside(/\bcode(:\s*|\s*=\s*)(['"`])/).filter((l) => !/code(:\s*|\s*=\s*)'(E[A-Z_]+|UND_ERR_[A-Z_]+)'/.test(l));
    assert.deepEqual(own, []);
  });

  it('every code is defined once, in one catalogue, and named after itself', () => {
    const all = CATALOGUES.flatMap(codesOf);
    assert.equal(new Set(all).size, all.length);
    for (const catalogue of CATALOGUES) {
      for (const [table, part] of catalogue.tables) {
        for (const [name, code] of Object.entries(table)) assert.equal(code, `${codec.PREFIX}${part}${name}`);
      }
      // Spelled out once in its catalogue's source: a second literal would be a second definition.
      const source = fs.readFileSync(path.join(ROOT, catalogue.file), 'utf8');
      for (const code of codesOf(catalogue)) assert.equal(source.split(`'${code}'`).length - 1, 1, `${code} in ${catalogue.file}`);
    }
  });

  it('every code keeps its spelling: the codes of each catalogue are the ones operators know', () => {
    for (const catalogue of CATALOGUES) {
      assert.deepEqual(codesOf(catalogue), STABLE[catalogue.file.split(path.sep).join('/')], catalogue.file);
    }
  });

  it('every class is in its layer\'s catalogue and carries a code of that catalogue', () => {
    for (const catalogue of CATALOGUES) {
      const { made, module } = catalogue;
      assert.deepEqual(made.map((e) => e.constructor).sort(), classesOf(module).sort(), `every class of ${catalogue.file} is made here`);
      for (const e of made) {
        assert.ok(codesOf(catalogue).includes(e.code), `${e.name}: ${e.code} is ${catalogue.file}'s`);
        assert.equal(e.name, e.constructor.name);
      }
    }
    const [codecErrors, productErrors, backendErrors] = CATALOGUES.map((c) => c.made);
    for (const e of [...productErrors, ...backendErrors]) assert.ok(e instanceof product.Ged145Error, `${e.name} is a Ged145Error`);
    for (const e of codecErrors) assert.ok(!(e instanceof product.Ged145Error), `${e.name} needs nothing outside the codec`);
  });

  it('a codec error\'s reason is its code\'s short form', () => {
    const [protocolError, encodeError, profileError] = CATALOGUES[0].made;
    assert.equal(protocolError.reason, 'tag_overrun');
    assert.equal(encodeError.reason, 'encode_bad_var');
    assert.equal(profileError.reason, 'profile_duplicate');
    assert.equal(codec.shortCode('ERR_GED145_FRAME_TOO_LARGE'), 'frame_too_large');
  });

  it('the codec\'s public entry names its errors from its own catalogue', () => {
    const protocol = require('../../lib/protocol');
    assert.equal(protocol.ProtocolError, codec.ProtocolError);
    assert.equal(protocol.EncodeError, codec.EncodeError);
    assert.equal(protocol.ProfileError, codec.ProfileError);
    assert.equal(protocol.ERROR_CODES, codec.ERROR_CODES);
    assert.equal(protocol.ENCODE_ERROR_CODES, codec.ENCODE_ERROR_CODES);
    assert.equal(protocol.PROFILE_ERROR_CODES, codec.PROFILE_ERROR_CODES);
  });
});
