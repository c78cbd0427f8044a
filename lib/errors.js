'use strict';

// The product's error catalogue, as undici's lib/core/errors.js is: every code and error class of
// the command line, the operator and the tools is defined here. Each layer below keeps its own:
// the codec's in lib/protocol/errors.js (it is published alone), the backend's in
// gateway/backend/errors.js; tests/architecture/error-catalogue.test.js checks all three (each code
// defined once, in its layer's catalogue, and spelled as before). Every class here is a
// Ged145Error: a `name` and a stable `code`; programs use the code, never the text. The CLI
// decides what to print and how to exit by the code (bin/ged145.js).

const CODES = Object.freeze({
  USAGE: 'ERR_GED145_USAGE', // a bad command line: one line, a pointer to --help, exit 2
  OPERATOR: 'ERR_GED145_OPERATOR', // an expected condition (bad config, port in use): one line, exit 1
  CONFIG: 'ERR_GED145_CONFIG', // a configuration that cannot be used: ConfigError, printed as an OperatorError
  CAPTURE: 'ERR_GED145_CAPTURE', // a capture file that is not one, or is cut short (tools/decode)
  CASE_FAILED: 'ERR_GED145_CASE_FAILED', // a conformance case saw the host break its requirement (tools/conformance)
  CASE_SKIPPED: 'ERR_GED145_CASE_SKIPPED', // a conformance case cannot run against this host as declared
});

/** The base of the product's errors (and the backend's): `code` is one of a catalogue's, `name` the class's. */
class Ged145Error extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

// ---- the command line and the operator -------------------------------------------------------

/** A bad command line. */
class UsageError extends Ged145Error {
  constructor(message, options) {
    super(CODES.USAGE, message, options);
  }
}

/** An operator-facing failure (bad config file, port in use, nothing listening): one clear line, no stack. */
class OperatorError extends Ged145Error {
  constructor(message, options) {
    super(CODES.OPERATOR, message, options);
  }
}

/**
 * A configuration that cannot be used: `problems`, one line each naming the key. Thrown wherever
 * configuration is refused: where a setting is checked or compiled (with one problem), gathered by
 * the loader into one (with all). The CLI prints each problem as a line, without a stack, and exits 1.
 */
class ConfigError extends OperatorError {
  constructor(problems, options) {
    const list = [].concat(problems);
    super(list.map((p) => `config: ${p}`).join('\n'), options);
    this.code = CODES.CONFIG;
    this.problems = list;
  }

  /** The same problems under a key ("routes.x: ..."). */
  under(prefix) {
    return new ConfigError(this.problems.map((p) => `${prefix}: ${p}`), { cause: this });
  }
}

// ---- the tools -------------------------------------------------------------------------------

/** A capture that is not one, or ends before a header says it should: what was read before is kept. */
class CaptureError extends Ged145Error {
  constructor(message) {
    super(CODES.CAPTURE, message);
  }
}

/** A conformance case failed: `observed` says what the host did instead of what the case expected. */
class CaseFailure extends Ged145Error {
  constructor(observed) {
    super(CODES.CASE_FAILED, observed);
    this.observed = observed;
  }
}

/** A conformance case cannot run against this host as declared (its subtype is not answered with data, say). */
class CaseSkipped extends Ged145Error {
  constructor(reason) {
    super(CODES.CASE_SKIPPED, reason);
  }
}

// ---- what an error says ----------------------------------------------------------------------

/** A failed listen(), as the operator should read it; other errors as they are. */
function listenError(err, host, port) {
  if (err.code === 'EADDRINUSE') return new OperatorError(`port ${port} on ${host} is already in use`);
  if (err.code === 'EACCES') return new OperatorError(`not allowed to listen on ${host}:${port}`);
  if (err.code === 'EADDRNOTAVAIL') return new OperatorError(`cannot listen on ${host}:${port}: ${host} is not an address of this machine`);
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return new OperatorError(`cannot listen on ${host}:${port}: no such host name`);
  return err;
}

/** The message of whatever was thrown (an Error, a string, a Proxy whose getters throw), for a log line. */
function messageOf(err) {
  try {
    return err instanceof Error ? String(err.message) : String(err);
  } catch {
    return 'an error that cannot be printed';
  }
}

module.exports = {
  CODES,
  Ged145Error,
  UsageError,
  OperatorError,
  ConfigError,
  CaptureError,
  CaseFailure,
  CaseSkipped,
  listenError,
  messageOf,
};
