'use strict';

// The codec's types as a TypeScript integrator gets them. The JSDoc of lib/protocol is the one
// source: `npm run lint` checks it (tsconfig.codec.json, strict), and `npm pack` emits it as
// declarations into types/ (the prepack script, tsconfig.types.json), which package.json's "types"
// names. Here the declarations are emitted the same way into an installed-package layout, and
// tests/protocol/types.ts, which uses the codec as an integrator would and holds the mistakes its
// types must refuse, is compiled against them with no JavaScript allowed: what a user of
// `require('ged145')` in a .ts file sees.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');
const { tmpDir } = require('../helpers/tmp');

const ROOT = path.join(__dirname, '..', '..');
const pkg = require('../../package.json');

/** tsconfig file -> its parsed command line (options with paths made absolute, file names). */
function tsconfig(name, overrides = {}) {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, name), overrides, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
  });
  assert.deepEqual(parsed.errors, []);
  return parsed;
}

function report(diagnostics) {
  return ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n',
  });
}

describe('the codec\'s types', function () {
  this.timeout(120000); // two compilations of the codec and @types/node; a busy machine makes them slow

  it('npm pack ships declarations of the whole public surface where package.json says, and an integrator\'s code compiles against them', () => {
    const dir = tmpDir('ged145-types-');
    const installed = path.join(dir, 'node_modules', 'ged145');
    const emit = tsconfig('tsconfig.types.json');
    const outDir = path.join(installed, path.relative(ROOT, emit.options.outDir));
    const program = ts.createProgram(emit.fileNames, { ...emit.options, outDir });
    const emitted = program.emit();
    assert.equal(report([...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics]), '');
    fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(installed, 'package.json'));
    assert.ok(fs.existsSync(path.join(installed, pkg.types)), `package.json "types" (${pkg.types}) is not what the prepack script emits`);

    const consumer = path.join(dir, 'consumer.ts');
    fs.copyFileSync(path.join(__dirname, 'types.ts'), consumer);
    const check = ts.createProgram([consumer], {
      strict: true,
      noEmit: true,
      module: ts.ModuleKind.Node16,
      target: ts.ScriptTarget.ES2022,
      lib: ['lib.es2023.d.ts'],
      typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      types: ['node'],
    });
    // No allowJs: if the declarations were missing, 'ged145' would be an untyped module (TS7016).
    assert.equal(report(ts.getPreEmitDiagnostics(check)), '');
    const index = check.getSourceFile(path.join(outDir, 'index.d.ts'));
    assert.ok(index, 'the consumer resolved ged145 to something other than the shipped declarations');
    const checker = check.getTypeChecker();
    const surface = checker.getTypeOfSymbol(checker.resolveExternalModuleSymbol(checker.getSymbolAtLocation(index)));
    const declared = new Map(surface.getProperties().map((p) => [p.name, checker.getTypeOfSymbol(p)]));
    const untyped = Object.keys(require('../../lib/protocol'))
      .filter((name) => !declared.has(name) || (declared.get(name).flags & ts.TypeFlags.Any) !== 0);
    assert.deepEqual(untyped, [], 'every export of lib/protocol is declared, none as any');
  });

  it('npm run lint checks the codec and the integrator\'s code with strict', () => {
    assert.match(pkg.scripts.lint, /\btsc -p tsconfig\.codec\.json\b/);
    assert.match(pkg.scripts.prepack, /\btsc -p tsconfig\.types\.json\b/);
    const codec = tsconfig('tsconfig.codec.json');
    assert.equal(codec.options.strict, true);
    assert.equal(codec.options.checkJs, true);
    const checked = new Set(codec.fileNames.map((f) => path.relative(ROOT, f)));
    const codecFiles = fs.readdirSync(path.join(ROOT, 'lib', 'protocol')).filter((f) => f.endsWith('.js')).map((f) => `lib/protocol/${f}`);
    assert.deepEqual(codecFiles.filter((f) => !checked.has(f)), []);
    assert.ok(checked.has('tests/protocol/types.ts'));
  });
});
