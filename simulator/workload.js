'use strict';

// What the router asks: a weighted mix of query templates. A template's strings may hold
// {rand:A-B} (a random integer, zero-padded to B's width), {seq} (the query's sequence number)
// and {pick:a|b|c}. Scenarios are JSON files: {"queries": [{"weight": 3, "subtype": ..., ...}]}.

const fs = require('node:fs');

const DEFAULT_MIX = Object.freeze([
  { weight: 6, subtype: 'customer.lookup', clid: '555{rand:1000000-1009999}', dn: '8005551000', routingClient: 'CVP_PG_1A' },
  {
    weight: 3, subtype: 'echo', clid: '555{rand:2000000-2999999}', ced: '{rand:1000-9999}#', vars: { 1: 'acct-{seq}', 2: 'x' },
    ecc: { 'user.lang': '{pick:en|es|fr}' },
  },
  { weight: 1, subtype: 'echo', eccArrays: [{ name: 'user.hist', index: 0, value: 'first' }, { name: 'user.hist', index: 1, value: '{seq}' }] },
]);

const TOKEN = /\{(rand:(\d+)-(\d+)|seq|pick:([^}]*))\}/g;

function compileString(s) {
  if (typeof s !== 'string' || !s.includes('{')) return () => s;
  return (ctx) => s.replace(TOKEN, (m, all, lo, hi, pick) => {
    if (all === 'seq') return String(ctx.seq);
    if (pick !== undefined) {
      const opts = pick.split('|');
      return opts[Math.floor(ctx.rnd() * opts.length)];
    }
    const a = Number(lo);
    const b = Number(hi);
    return String(a + Math.floor(ctx.rnd() * (b - a + 1))).padStart(hi.length, '0');
  });
}

function compileValue(v) {
  if (typeof v === 'string') return compileString(v);
  if (Array.isArray(v)) {
    const parts = v.map(compileValue);
    return (ctx) => parts.map((p) => p(ctx));
  }
  if (v !== null && typeof v === 'object') {
    const parts = Object.entries(v).map(([k, x]) => [k, compileValue(x)]);
    return (ctx) => {
      const o = {};
      for (const [k, p] of parts) o[k] = p(ctx);
      return o;
    };
  }
  return () => v;
}

const FIELDS = ['subtype', 'clid', 'ced', 'cdpd', 'dn', 'routingClient', 'vars', 'ecc', 'eccArrays'];

class QueryMix {
  constructor(templates = DEFAULT_MIX, rnd = Math.random) {
    if (!Array.isArray(templates) || templates.length === 0) throw new RangeError('a scenario needs at least one query template');
    this.rnd = rnd;
    this.seq = 0;
    this.total = 0;
    this.entries = templates.map((t) => {
      const weight = t.weight === undefined ? 1 : t.weight;
      if (!(weight > 0)) throw new RangeError('template weights must be positive');
      for (const k of Object.keys(t)) {
        if (k !== 'weight' && k !== 'noScriptReply' && !FIELDS.includes(k)) throw new RangeError(`unknown template field '${k}'`);
      }
      this.total += weight;
      const fields = FIELDS.filter((f) => t[f] !== undefined).map((f) => [f, compileValue(t[f])]);
      return { upTo: this.total, fields, noScriptReply: Boolean(t.noScriptReply) };
    });
  }

  /** The fields of the next QUERY_REQ (InvokeID and flags are the connection's business). */
  next() {
    const r = this.rnd() * this.total;
    const e = this.entries.find((x) => r < x.upTo) || this.entries[this.entries.length - 1];
    const ctx = { seq: ++this.seq, rnd: this.rnd };
    const q = { routerCallDay: 1 + (this.seq >>> 20), routerCallKey: this.seq & 0xfffff, noScriptReply: e.noScriptReply };
    for (const [f, gen] of e.fields) q[f] = gen(ctx);
    return q;
  }
}

function loadScenario(file) {
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  return Array.isArray(json) ? json : json.queries;
}

module.exports = { QueryMix, loadScenario };
