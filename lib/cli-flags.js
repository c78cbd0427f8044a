'use strict';

const { UsageError } = require('./errors');

/**
 * A numeric flag from parseArgs' string values: undefined when not given, else a number within
 * the bounds, or a UsageError naming the flag (the CLI then prints usage and exits 2).
 */
function numberFlag(values, key, { int = false, min = -Infinity, max = Infinity, positive = false } = {}) {
  const raw = values[key];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  const ok = raw !== '' && Number.isFinite(n) && (!int || Number.isInteger(n)) && n >= min && n <= max && (!positive || n > 0);
  if (!ok) {
    const what = `${positive ? 'a positive ' : ''}${int ? 'integer' : 'number'}`;
    const range = min > -Infinity || max < Infinity ? ` from ${min}${max < Infinity ? ` to ${max}` : ''}` : '';
    throw new UsageError(`--${key} must be ${positive ? what : `${int ? 'an' : 'a'} ${what}`}${range}, got '${raw}'`);
  }
  return n;
}

module.exports = { numberFlag };
