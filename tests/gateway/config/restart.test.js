'use strict';

// The reload's restart diff (gateway/config/restart.js), the one function both runtimes reload
// through: what needs a restart keeps the running value, in place, and the rest is the new one.

const assert = require('node:assert/strict');
const { loadConfig } = require('../../../gateway/config');
const { holdRestartSettings, restartNeeded } = require('../../../gateway/config/restart');

const base = {
  host: '127.0.0.1', port: 4001, 'admin.port': 0, 'backend.url': 'http://127.0.0.1:9', deadlineMs: 200,
};
const configOf = (more = {}) => loadConfig({ env: {}, overrides: { ...base, ...more } });

describe('config/restart: holdRestartSettings', () => {
  it('a compiled configuration: the port and the admin port keep the running values, the deadline is the new one, its compiled routes stay its own', () => {
    const running = configOf();
    const next = configOf({ port: 4002, 'admin.port': 9100, deadlineMs: 250 });
    const routes = next.compiledRoutes;
    assert.deepEqual(holdRestartSettings(running, next).sort(), ['admin', 'port']);
    assert.equal(next.port, 4001);
    assert.deepEqual(next.admin, running.admin);
    assert.equal(next.deadlineMs, 250);
    assert.equal(next.compiledRoutes, routes, 'held in place: the compiled parts a spread would lose are still there');
  });

  it('the same settings as JSON (what a cluster primary sends its workers) give the same keys and values', () => {
    const running = configOf();
    const next = JSON.parse(JSON.stringify(configOf({ port: 4002, workers: 3, deadlineMs: 250 })));
    assert.deepEqual(holdRestartSettings(running, next).sort(), ['port', 'workers']);
    assert.deepEqual([next.port, next.workers, next.deadlineMs], [4001, running.workers, 250]);
    assert.deepEqual(restartNeeded(running, next), [], 'once held, nothing is left to restart for');
  });

  it('nothing that needs a restart changed: nothing is held', () => {
    const next = configOf({ deadlineMs: 250 });
    assert.deepEqual(holdRestartSettings(configOf(), next), []);
    assert.equal(next.deadlineMs, 250);
  });
});
