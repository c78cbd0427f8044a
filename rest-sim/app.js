'use strict';

// The REST backend simulator: the gateway's query contract (POST /query/:subtype), an ordinary
// REST interface (GET /customers/:ani, GET /accounts/:id/balance) for per-subtype route mapping,
// and fault injection on all of it, controlled through /admin.

const express = require('express');
const { Faults } = require('./faults');
const { generateCustomers } = require('./customers');
const { prng } = require('../lib/prng');

const NOT_JSON = 'this is not JSON {';

class Stats {
  constructor() {
    this.reset();
  }

  reset() {
    this.since = new Date().toISOString();
    this.routes = Object.create(null);
  }

  count(route, outcome) {
    const r = this.routes[route] || (this.routes[route] = Object.create(null));
    r[outcome] = (r[outcome] || 0) + 1;
  }

  toJSON() {
    let total = 0;
    for (const r of Object.values(this.routes)) for (const n of Object.values(r)) total += n;
    return { since: this.since, total, routes: this.routes };
  }
}

/** The answer of the query contract for a customer: VARs and ECC variables from the record. */
function customerAnswer(c) {
  return {
    vars: { 1: c.accountId, 2: c.tier, 3: c.balance, 4: c.skillGroup, 5: c.language },
    ecc: { 'user.name': c.name, 'user.tier': c.tier, 'user.acct': c.accountId },
  };
}

const echo = (q) => ({ vars: q.vars || {}, ecc: q.ecc || {}, eccArrays: q.eccArrays || [] });

function createRestSim({ faults = {}, customers = 10000, seed = 145 } = {}) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const state = {
    faults: new Faults(faults, prng(seed ^ 0x5eed)),
    stats: new Stats(),
    customers: generateCustomers(customers, seed),
    hanging: new Set(),
  };

  // Admin: never subject to faults.
  app.get('/admin/faults', (req, res) => res.json(state.faults.settings));
  app.put('/admin/faults', express.json(), (req, res) => {
    try {
      state.faults.update(req.body || {});
    } catch (err) {
      return res.status(400).json({ error: err.message });
    }
    return res.json(state.faults.settings);
  });
  app.get('/admin/stats', (req, res) => res.json(state.stats));
  app.post('/admin/reset', (req, res) => {
    state.faults.reset();
    state.stats.reset();
    res.json({ ok: true });
  });

  // Every other request: count it, then draw a fault, then the latency.
  app.use((req, res, next) => {
    const route = routeOf(req);
    res.locals.route = route;
    res.on('finish', () => state.stats.count(route, String(res.statusCode)));
    const failure = state.faults.drawFailure();
    if (failure === 'hang') {
      state.stats.count(route, 'hang');
      state.hanging.add(res);
      res.on('close', () => state.hanging.delete(res));
      return undefined;
    }
    if (failure === 'reset') {
      state.stats.count(route, 'reset');
      req.socket.destroy();
      return undefined;
    }
    if (failure === 'error') return res.status(500).json({ error: 'injected fault' });
    const delay = state.faults.drawLatency();
    if (delay > 0) {
      setTimeout(next, delay);
      return undefined;
    }
    return next();
  });

  app.post('/query/:subtype', express.json({ limit: '64kb' }), (req, res) => {
    const q = req.body || {};
    switch (req.params.subtype) {
      case 'echo': return res.json(echo(q));
      case 'customer.lookup': {
        const c = state.customers.byClid.get(q.clid);
        if (!c) return res.status(404).json({ error: `no customer with CLID ${q.clid || '(none)'}` });
        return res.json(customerAnswer(c));
      }
      case 'slow': {
        const ms = Number(q.vars && q.vars[1]) || 0;
        const timer = setTimeout(() => res.json(echo(q)), ms);
        res.on('close', () => clearTimeout(timer));
        return undefined;
      }
      case 'fail': return res.status(500).json({ error: 'backend failure (fail subtype)' });
      case 'reject': return res.status(422).json({ error: 'request rejected (reject subtype)' });
      case 'garbage': return res.status(200).type('application/json').send(NOT_JSON);
      case 'reset':
        state.stats.count(res.locals.route, 'reset');
        return req.socket.destroy();
      case 'hang':
        state.stats.count(res.locals.route, 'hang');
        state.hanging.add(res);
        res.on('close', () => state.hanging.delete(res));
        return undefined;
      default: return res.status(404).json({ error: 'unknown subtype' });
    }
  });

  app.get('/customers/:ani', (req, res) => {
    const c = state.customers.byClid.get(req.params.ani);
    if (!c) return res.status(404).json({ error: `no customer with ANI ${req.params.ani}` });
    return res.json(c);
  });

  app.get('/accounts/:id/balance', (req, res) => {
    const c = state.customers.byAccount.get(req.params.id);
    if (!c) return res.status(404).json({ error: `no account ${req.params.id}` });
    return res.json({ accountId: c.accountId, balance: c.balance, currency: 'USD' });
  });

  app.use((req, res) => res.status(404).json({ error: 'not found' }));
  // Malformed JSON bodies and other request errors: a JSON answer, no stack.
  app.use((err, req, res, _next) => { // four arguments: express's error handler
    res.status(err.status || err.statusCode || 500).json({ error: err.expose ? err.message : 'internal error' });
  });

  return { app, state };
}

const KNOWN_SUBTYPES = new Set(['echo', 'customer.lookup', 'slow', 'fail', 'reject', 'garbage', 'reset', 'hang']);

/** A bounded set of labels for /admin/stats (an unknown subtype must not add a row per name). */
function routeOf(req) {
  const p = req.path;
  if (p.startsWith('/query/')) {
    const subtype = decodeURIComponentSafe(p.slice(7));
    return `POST /query/${KNOWN_SUBTYPES.has(subtype) ? subtype : '(unknown)'}`;
  }
  if (p.startsWith('/customers/')) return 'GET /customers/:ani';
  if (/^\/accounts\/[^/]+\/balance$/.test(p)) return 'GET /accounts/:id/balance';
  return '(other)';
}

function decodeURIComponentSafe(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

module.exports = { createRestSim };
