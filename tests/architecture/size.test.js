'use strict';

// Rooms small enough to live in: no file in gateway/ or lib/ longer than 400 lines and no function
// longer than 80 (ESLint's max-lines and max-lines-per-function, every line counted, comments and
// blank lines too). The browser scripts of the status page (gateway/ops/page/) are aside.
//
// EXCEPTIONS names what is still too big, file and what. The list only shrinks: a new offender
// fails, and so does an entry that is no longer needed (take it out when you cut that code).

const assert = require('node:assert/strict');
const path = require('node:path');
const { ESLint } = require('eslint');

const ROOT = path.join(__dirname, '..', '..');
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;

/** '<file>: file' for a file too long, '<file>: <function as ESLint names it>' for a function too long. */
const EXCEPTIONS = [];

// Only the two size rules, on a plain parser setup: the project's other rules are `npm run lint`'s.
const CONFIG = {
  languageOptions: { ecmaVersion: 'latest', sourceType: 'commonjs' },
  rules: {
    'max-lines': ['error', { max: MAX_FILE_LINES, skipBlankLines: false, skipComments: false }],
    'max-lines-per-function': ['error', { max: MAX_FUNCTION_LINES, skipBlankLines: false, skipComments: false, IIFEs: true }],
  },
};

function sizeLinter() {
  return new ESLint({ cwd: ROOT, overrideConfigFile: true, overrideConfig: CONFIG, ignorePatterns: ['gateway/ops/page/**'] });
}

/** One key per offence, in the form EXCEPTIONS uses; the lengths are in `detail`. */
function offences(results) {
  const found = new Map();
  for (const result of results) {
    const file = path.relative(ROOT, result.filePath).split(path.sep).join('/');
    for (const m of result.messages) {
      if (m.fatal) throw new Error(`${file}:${m.line}: ${m.message}`);
      const what = m.ruleId === 'max-lines' ? 'file' : m.message.replace(/ has too many lines.*$/, '');
      found.set(`${file}: ${what}`, `${file}:${m.line} ${m.message}`);
    }
  }
  return found;
}

describe('size: no file over 400 lines, no function over 80 (gateway/ and lib/, browser code aside)', function () {
  this.timeout(60000);

  let found;
  before(async () => {
    found = offences(await sizeLinter().lintFiles(['gateway/**/*.js', 'lib/**/*.js']));
  });

  it('the check sees a file of 401 lines and a function of 81, and lets 400 and 80 pass', async () => {
    const body = (n) => Array.from({ length: n }, (_, i) => `  x += ${i};`).join('\n');
    const fn = (lines) => `function f() {\n  let x = 0;\n${body(lines - 4)}\n  return x;\n}`; // `lines` lines in all
    const text = (fnLines, fileLines) => {
      const code = `'use strict';\n${fn(fnLines)}\nf();`;
      const pad = fileLines - code.split('\n').length;
      return `${code}${'\n//'.repeat(pad)}`;
    };
    const lint = async (source) => {
      const [result] = await sizeLinter().lintText(source, { filePath: path.join(ROOT, 'gateway', 'size-probe.js') });
      return [...offences([result]).keys()].sort();
    };
    assert.deepEqual(await lint(text(80, 400)), []);
    assert.deepEqual(await lint(text(81, 401)), ["gateway/size-probe.js: Function 'f'", 'gateway/size-probe.js: file']);
    // Browser code is aside: the same text under gateway/ops/page/ is not linted at all.
    const [page] = await sizeLinter().lintText(text(81, 401), { filePath: path.join(ROOT, 'gateway', 'ops', 'page', 'x.js'), warnIgnored: false });
    assert.equal(page, undefined);
  });

  it('no new offender: every file and function too long is a listed exception', () => {
    const fresh = [...found].filter(([key]) => !EXCEPTIONS.includes(key)).map(([, detail]) => detail);
    assert.deepEqual(fresh, [], `cut these (limits: ${MAX_FILE_LINES} lines a file, ${MAX_FUNCTION_LINES} a function):\n${fresh.join('\n')}`);
  });

  it('the exception list only shrinks: every listed exception is still needed', () => {
    const stale = EXCEPTIONS.filter((key) => !found.has(key));
    assert.deepEqual(stale, [], `now within the limits: take these out of EXCEPTIONS in ${path.relative(ROOT, __filename)}`);
  });

  it('the exception list names each offence once', () => {
    assert.equal(new Set(EXCEPTIONS).size, EXCEPTIONS.length);
  });
});
