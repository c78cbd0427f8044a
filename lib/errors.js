'use strict';

// The product's error catalogue, in the manner of undici's lib/core/errors.js: each class has a
// `name` and a stable `code`, and the CLI decides what to print and how to exit by the code
// (bin/ged145.js). The codec's own errors are in lib/protocol/errors.js (a code per way a frame
// can be wrong, ERR_GED145_TAG_OVERRUN..., and per encoder refusal, ERR_GED145_ENCODE_...), the HTTP
// engines' in gateway/backend/engines/errors.js with CODES.ENGINE. Every code starts ERR_GED145_;
// logs and metric labels use the short snake_case form (tag_overrun), as backend reasons do.

const CODES = Object.freeze({
  USAGE: 'ERR_GED145_USAGE', // a bad command line: one line, a pointer to --help, exit 2
  OPERATOR: 'ERR_GED145_OPERATOR', // an expected condition (bad config, port in use): one line, exit 1
  ENGINE: 'ERR_GED145_ENGINE', // a backend HTTP request failed (gateway/backend/engines/errors.js)
  CONFIG: 'ERR_GED145_CONFIG', // a configuration that cannot be used: ConfigError (gateway/config), printed as an OperatorError
  BACKEND: 'ERR_GED145_BACKEND', // a handler module's ctx.request got no HTTP answer (gateway/backend/backend.js)
  AUTH: 'ERR_GED145_AUTH', // no credentials for a backend request: the token endpoint failed (gateway/backend/auth.js)
  PLACEHOLDER: 'ERR_GED145_PLACEHOLDER', // a URL placeholder value that cannot be a path segment (gateway/config/routes.js)
});

/** A bad command line. */
class UsageError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'UsageError';
    this.code = CODES.USAGE;
  }
}

/** An operator-facing failure (bad config file, port in use, nothing listening): one clear line, no stack. */
class OperatorError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'OperatorError';
    this.code = CODES.OPERATOR;
  }
}

/**
 * A configuration that cannot be used: `problems`, one line each naming the key. Thrown where a
 * setting is checked or compiled (with one problem), gathered by the loader into one (with all).
 * The CLI prints each problem as a line, without a stack, and exits 1.
 */
class ConfigError extends OperatorError {
  constructor(problems, options) {
    const list = [].concat(problems);
    super(list.map((p) => `config: ${p}`).join('\n'), options);
    this.name = 'ConfigError';
    this.code = CODES.CONFIG;
    this.problems = list;
  }

  /** The same problems under a key ("routes.x: ..."). */
  under(prefix) {
    return new ConfigError(this.problems.map((p) => `${prefix}: ${p}`), { cause: this });
  }
}

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
  CODES, UsageError, OperatorError, ConfigError, listenError, messageOf,
};
