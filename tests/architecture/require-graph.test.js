'use strict';

// No import cycle in gateway/ (or lib/): every require() of a relative path, at the top of a module
// or inside a function (a lazy require hides a cycle, it does not remove it), read from the source.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');

function modules(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'page' ? [] : modules(p); // page/: browser scripts, no require
    return e.name.endsWith('.js') ? [p] : [];
  });
}

/** The graph: module -> the modules of this repository it requires. */
function requireGraph(dirs) {
  const graph = new Map();
  for (const file of dirs.flatMap((d) => modules(path.join(ROOT, d)))) {
    const source = fs.readFileSync(file, 'utf8');
    const deps = [...source.matchAll(/require\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)].map((m) => require.resolve(path.resolve(path.dirname(file), m[1])));
    graph.set(file, deps);
  }
  return graph;
}

/** Every cycle, each as the list of its modules (relative to the repository), found by depth-first search. */
function cycles(graph) {
  const found = [];
  const state = new Map(); // file -> 'open' | 'done'
  const stack = [];
  const visit = (file) => {
    state.set(file, 'open');
    stack.push(file);
    for (const dep of graph.get(file) || []) {
      if (state.get(dep) === 'open') found.push([...stack.slice(stack.indexOf(dep)), dep].map((f) => path.relative(ROOT, f)));
      else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

describe('require graph', () => {
  it('gateway/ and lib/ have no import cycle', () => {
    const graph = requireGraph(['gateway', 'lib']);
    assert.ok(graph.size > 40, `${graph.size} modules`);
    assert.deepEqual(cycles(graph), []);
  });

  it('gateway/backend/ requires nothing from gateway/ops/: operations subscribe to the backend, never the other way round', () => {
    const graph = requireGraph(['gateway/backend']);
    const ops = path.join(ROOT, 'gateway', 'ops') + path.sep;
    const upward = [...graph].flatMap(([file, deps]) => deps.filter((d) => d.startsWith(ops))
      .map((d) => `${path.relative(ROOT, file)} -> ${path.relative(ROOT, d)}`));
    assert.ok(graph.size > 20, `${graph.size} modules`);
    assert.deepEqual(upward, []);
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const a = path.join(ROOT, 'a.js');
    const b = path.join(ROOT, 'b.js');
    assert.deepEqual(cycles(new Map([[a, [b]], [b, [a]]])), [['a.js', 'b.js', 'a.js']]);
  });
});
