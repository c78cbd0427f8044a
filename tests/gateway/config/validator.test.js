'use strict';

// The configuration's validator is compiled ahead of time (gateway/config/validator-build.js), so a
// gateway never loads ajv's compiler at its start. The committed file must be what the build
// writes from today's schema: a schema changed without `npm run build:validator` fails here.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { buildValidatorSource, FILE } = require('../../../gateway/config/validator-build');
const { schemaProblems } = require('../../../gateway/config/validate');

const SNAPSHOT = path.join(os.tmpdir(), `ged145-validator-${process.pid}.heapsnapshot`);

describe('config validator: compiled ahead of time from the schema', function () {
  this.timeout(30000);

  it('the committed validator.generated.js is what the build writes from schema.js today', () => {
    const committed = fs.readFileSync(FILE, 'utf8');
    assert.ok(committed === buildValidatorSource(), 'gateway/config/validator.generated.js is stale: run `npm run build:validator` and commit it');
  });

  it('reads a configuration with the generated validator, and a gateway process loads none of ajv but its runtime helpers', () => {
    assert.deepEqual(schemaProblems({ port: 70000, limits: { maxInFlihgt: 5 } }), [
      'port must be a port number 0..65535',
      "unknown key 'limits.maxInFlihgt' (did you mean 'limits.maxInFlight'?)",
    ]);
    // This process loaded ajv for the build in the test above: a child shows what a gateway loads.
    const out = execFileSync(process.execPath, ['-e', `
      const { schemaProblems } = require(${JSON.stringify(require.resolve('../../../gateway/config/validate'))});
      if (schemaProblems({ port: 0 }).length !== 0) throw new Error('port 0 refused');
      process.stdout.write(JSON.stringify(Object.keys(require.cache).filter((f) => f.includes('/node_modules/ajv/'))));
    `], { encoding: 'utf8' });
    const ajvFiles = JSON.parse(out);
    assert.ok(ajvFiles.length > 0, 'the runtime helper the validator needs is loaded');
    assert.deepEqual(ajvFiles.filter((f) => !f.includes('/dist/runtime/')), [], 'ajv compiler modules loaded');
  });

  it('lets the validator go after a verdict: no string of its size stays in the heap, as one does while it is required', () => {
    // A heap snapshot's largest strings, after a verdict and then with the file held by require.
    const out = execFileSync(process.execPath, ['--expose-gc', '-e', `
      const v8 = require('node:v8');
      const { schemaProblems } = require(${JSON.stringify(require.resolve('../../../gateway/config/validate'))});
      const largest = () => {
        global.gc();
        const s = JSON.parse(require('node:fs').readFileSync(v8.writeHeapSnapshot(${JSON.stringify(SNAPSHOT)}), 'utf8'));
        require('node:fs').unlinkSync(${JSON.stringify(SNAPSHOT)});
        const { node_fields: f, node_types: [types] } = s.snapshot.meta;
        let max = 0;
        for (let i = 0; i < s.nodes.length; i += f.length) {
          if (types[s.nodes[i + f.indexOf('type')]] === 'string') max = Math.max(max, s.nodes[i + f.indexOf('self_size')]);
        }
        return max;
      };
      if (schemaProblems({ port: 70000 }).length !== 1) throw new Error('port 70000 taken');
      const after = largest();
      require(${JSON.stringify(FILE)}); // the module cache holds it
      process.stdout.write(JSON.stringify({ after, held: largest() }));
    `], { encoding: 'utf8' });
    const { after, held } = JSON.parse(out);
    const size = fs.statSync(FILE).size;
    assert.ok(held >= size, `the control finds the required file's source (${held} bytes, the file ${size})`);
    assert.ok(after < size / 4, `a string of ${after} bytes stayed after the verdict (the file is ${size})`);
  });
});
