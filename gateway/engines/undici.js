'use strict';

const { Pool } = require('undici');
const { reasonOf, EngineError } = require('./errors');

/** undici: one keep-alive Pool per backend origin, bounded response size. */
class Engine {
  constructor({ connections = 64, maxResponseBytes = 64 * 1024, keepAliveTimeout = 30_000 } = {}) {
    this.name = 'undici';
    this.options = { connections, maxResponseSize: maxResponseBytes, keepAliveTimeout, pipelining: 1 };
    this.pools = new Map();
  }

  pool(origin) {
    let p = this.pools.get(origin);
    if (p === undefined) {
      p = new Pool(origin, this.options);
      this.pools.set(origin, p);
    }
    return p;
  }

  async request({ origin, path, method, headers, body, signal }) {
    try {
      const res = await this.pool(origin).request({ path, method, headers, body, signal });
      const text = await res.body.text();
      return { status: res.statusCode, text };
    } catch (err) {
      throw new EngineError(reasonOf(err, signal), err);
    }
  }

  async close() {
    await Promise.all([...this.pools.values()].map((p) => p.destroy()));
    this.pools.clear();
  }
}

module.exports = { Engine };
