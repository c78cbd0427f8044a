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

/** The modules reachable from `from` in graph, itself included. */
function reachable(graph, from) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const dep of graph.get(file) || []) visit(dep);
  };
  for (const f of from) visit(f);
  return seen;
}

/** What the core (gateway/server.js, session/, answer/) reaches in ops/: nothing, operations subscribe from above. */
function coreReachesOps(graph) {
  const core = [...graph.keys()].filter((f) => {
    const rel = path.relative(ROOT, f);
    return rel === path.join('gateway', 'server.js') || rel.startsWith(`gateway${path.sep}session${path.sep}`)
      || rel.startsWith(`gateway${path.sep}answer${path.sep}`);
  });
  const ops = `gateway${path.sep}ops${path.sep}`;
  return { core, ops: [...reachable(graph, core)].map((f) => path.relative(ROOT, f)).filter((rel) => rel.startsWith(ops)) };
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

  it('the core (server.js, session/, answer/) requires nothing from gateway/ops/, not even through another module', () => {
    const { core, ops } = coreReachesOps(requireGraph(['gateway', 'lib']));
    assert.ok(core.length > 12, `${core.length} core modules`);
    assert.deepEqual(ops, []);
  });

  it('finds a path from the core to ops/ when there is one (the check can fail)', () => {
    const f = (rel) => path.join(ROOT, rel);
    const graph = new Map([
      [f('gateway/server.js'), [f('gateway/session/session.js')]],
      [f('gateway/session/session.js'), [f('lib/logger.js')]],
      [f('lib/logger.js'), [f('gateway/ops/metrics.js')]],
    ]);
    assert.deepEqual(coreReachesOps(graph).ops, [path.join('gateway', 'ops', 'metrics.js')]);
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const a = path.join(ROOT, 'a.js');
    const b = path.join(ROOT, 'b.js');
    assert.deepEqual(cycles(new Map([[a, [b]], [b, [a]]])), [['a.js', 'b.js', 'a.js']]);
  });
});
