'use strict';

// The records of one call in the decision files (gateway/ops/decisions.js): the file named, its
// rotated and gzipped older ones (decisions1.jsonl.gz...), and with --workers every worker's
// (decisions.w3.jsonl, decisions.w31.jsonl.gz...). A line is parsed only when it holds the call's
// RouterCallDay and RouterCallKey as the gateway writes them, so a day of records reads fast.

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const zlib = require('node:zlib');
const { pipeline } = require('node:stream');

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The files of decision log `file`, newest name first, and the directory they were looked for in. */
function decisionFiles(file) {
  const dir = path.dirname(path.resolve(file));
  const ext = path.extname(file);
  const stem = path.basename(file, ext);
  const name = new RegExp(`^${escape(stem)}(\\.w\\d+)?\\d*${escape(ext)}(\\.gz)?$`);
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    return { dir, files: [], error: err.code || err.message };
  }
  return { dir, files: names.filter((n) => name.test(n)).sort().map((n) => path.join(dir, n)), error: null };
}

/** The records of call day/key in one file (a .gz read through gunzip); onProblem(text) hears of a file cut short. */
async function searchFile(file, day, key, onProblem) {
  const found = [];
  const dayText = `"routerCallDay":${day},`;
  const keyText = `"routerCallKey":${key},`;
  // pipeline: a gzip cut short (a rotation the machine stopped in the middle of) ends the loop with its error.
  const input = file.endsWith('.gz') ? pipeline(fs.createReadStream(file), zlib.createGunzip(), () => {}) : fs.createReadStream(file);
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (!line.includes(keyText) || !line.includes(dayText)) continue;
      let r;
      try {
        r = JSON.parse(line);
      } catch {
        continue; // the last line of a file being written, cut at a write
      }
      if (r.routerCallDay === day && r.routerCallKey === key) found.push(r);
    }
  } catch (err) {
    onProblem(`${file}: ${err.code || err.message} (read as far as it goes)`);
  }
  return found;
}

/** Every record of call day/key in the decision files of `file`, oldest first. */
async function findCall(file, day, key, onProblem = () => {}) {
  const { dir, files, error } = decisionFiles(file);
  const records = [];
  for (const f of files) records.push(...await searchFile(f, day, key, onProblem));
  records.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  return {
    dir, files, error, records,
  };
}

module.exports = { findCall, decisionFiles };
