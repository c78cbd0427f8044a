'use strict';

// README.md and docs/*.md point only at what exists: every relative link names a file of the
// repository (and, with a #fragment into a Markdown file, one of its headings), and every path
// written in code quotes under the repository's own folders (`gateway/ops/warmup.js`,
// `tests/stress/heap.test.js`) names a file or folder that is there. A file moved or a heading
// renamed without the docs following fails here. And no doc names an issue number: the history is
// git's.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
/** Top-level folders whose paths the docs quote; a quoted path under one of them must exist. */
const TREE = ['bench', 'bin', 'deploy', 'docs', 'gateway', 'lib', 'rest-sim', 'runner', 'simulator', 'tests', 'tools'];

/** The text outside fenced code blocks, line by line (a fence's content is an example, not a reference). */
function prose(text) {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2... */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  for (const line of prose(fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1].toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) || 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function links(file) {
  const found = [];
  for (const line of prose(fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
    const text = line.replace(/`[^`]*`/g, '``'); // a link written as code is an example
    for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push(m[1]);
  }
  return found;
}

function quotedPaths(file) {
  const found = [];
  for (const line of prose(fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
    for (const m of line.matchAll(/`([^`\s]+)`/g)) {
      const p = m[1].replace(/[.,;:]$/, '');
      const top = p.split('/')[0];
      if (!TREE.includes(top) || !p.includes('/') || /[*<>{}$]|\.\.\./.test(p)) continue;
      found.push(p);
    }
  }
  return found;
}

describe('links and paths in README.md and docs/*.md', () => {
  it('every relative link names a file that exists, and a heading of it when it has a #fragment', () => {
    const broken = [];
    for (const file of DOCS) {
      for (const target of links(file)) {
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        const [rel, fragment] = target.split('#');
        const dest = rel === '' ? file : path.normalize(path.join(path.dirname(file), rel));
        if (!fs.existsSync(path.join(ROOT, dest))) {
          broken.push(`${file}: ${target} (no ${dest})`);
          continue;
        }
        if (fragment !== undefined && dest.endsWith('.md') && !anchors(dest).has(fragment)) {
          broken.push(`${file}: ${target} (no heading #${fragment} in ${dest})`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  it('no heading or sentence names an issue by number: a doc says what a feature is, git says when it came', () => {
    const named = [];
    for (const file of DOCS) {
      fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
        if (/\bissues?\s+#?\d+/i.test(line)) named.push(`${file}:${i + 1}: ${line.trim().slice(0, 80)}`);
      });
    }
    assert.deepEqual(named, []);
  });

  it('every path quoted under the repository\'s folders exists', () => {
    const missing = [];
    for (const file of DOCS) {
      for (const p of quotedPaths(file)) {
        // A module may be named as Node requires it, without .js (`lib/errors`).
        if (!fs.existsSync(path.join(ROOT, p)) && !fs.existsSync(path.join(ROOT, `${p}.js`))) missing.push(`${file}: ${p}`);
      }
    }
    assert.deepEqual(missing, []);
  });
});
