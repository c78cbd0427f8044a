'use strict';

// Plain-object facts used wherever JSON from a backend, a config file or a router is read.

/** A plain object: not null, not an array. */
function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * obj[key] = value, where key came from outside (an ECC name, a subtype): `__proto__` stays a
 * plain own property instead of replacing the object's prototype.
 */
function setOwn(obj, key, value) {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

module.exports = { isObject, setOwn };
