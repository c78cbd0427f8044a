'use strict';

// Fault injection settings for the REST simulator: latency (fixed, uniform or normal), and the
// rates of 500s, connection resets and hangs. Validated on every change, so a bad PUT is a 400.

const DISTRIBUTIONS = ['fixed', 'uniform', 'normal'];
const DEFAULTS = Object.freeze({ latency: 0, latencySpread: 0, latencyDist: 'fixed', errorRate: 0, resetRate: 0, hangRate: 0 });

function validate(input) {
  const out = { ...DEFAULTS, ...input };
  for (const key of Object.keys(out)) {
    if (!Object.hasOwn(DEFAULTS, key)) throw new RangeError(`unknown fault setting '${key}'`);
  }
  for (const key of ['latency', 'latencySpread']) {
    if (!Number.isFinite(out[key]) || out[key] < 0) throw new RangeError(`${key} must be a number of milliseconds >= 0`);
  }
  for (const key of ['errorRate', 'resetRate', 'hangRate']) {
    if (!Number.isFinite(out[key]) || out[key] < 0 || out[key] > 1) throw new RangeError(`${key} must be a rate from 0 to 1`);
  }
  if (!DISTRIBUTIONS.includes(out.latencyDist)) throw new RangeError(`latencyDist must be one of ${DISTRIBUTIONS.join(', ')}`);
  if (out.errorRate + out.resetRate + out.hangRate > 1) throw new RangeError('errorRate + resetRate + hangRate must not exceed 1');
  return out;
}

class Faults {
  constructor(settings = {}, random = Math.random) {
    this.random = random;
    this.set(settings);
  }

  set(settings) {
    this.settings = validate(settings);
  }

  /** Merges a partial change (PUT /admin/faults) into the current settings. */
  update(partial) {
    this.settings = validate({ ...this.settings, ...partial });
  }

  reset() {
    this.settings = { ...DEFAULTS };
  }

  /** 'hang' | 'reset' | 'error' | null, drawn once per request. */
  drawFailure() {
    const { errorRate, resetRate, hangRate } = this.settings;
    if (errorRate + resetRate + hangRate === 0) return null;
    const r = this.random();
    if (r < hangRate) return 'hang';
    if (r < hangRate + resetRate) return 'reset';
    if (r < hangRate + resetRate + errorRate) return 'error';
    return null;
  }

  /** Milliseconds to wait before answering. */
  drawLatency() {
    const { latency, latencySpread, latencyDist } = this.settings;
    if (latencyDist === 'fixed' || latencySpread === 0) return latency;
    if (latencyDist === 'uniform') return Math.max(0, latency + (this.random() * 2 - 1) * latencySpread);
    // normal: Box-Muller, clamped at 0
    const u = 1 - this.random();
    const v = this.random();
    return Math.max(0, latency + latencySpread * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v));
  }
}

module.exports = { Faults, DEFAULTS, validate };
