'use strict';

// The compiled configuration's secrets, visible as fields yet never printed: a private key's and
// the DES key's bytes, header values (a token, ${NAME} from the environment, a file's), a proxy
// URL's password. util.inspect (console.log, the debugger's REPL) and JSON.stringify show
// [redacted] in their place; the code that uses them reads them as before. backend.auth's secret
// is AuthSpec's (backend.js), behind reveal().

const { inspect } = require('node:util');

const REDACTED = '[redacted]';

/** A Buffer (a private key, the DES key) that util.inspect and JSON print as [redacted]; the bytes are unchanged. */
function redactedBytes(buf) {
  if (buf === null || buf === undefined) return buf;
  Object.defineProperty(buf, 'toJSON', { value: () => REDACTED });
  Object.defineProperty(buf, inspect.custom, { value: () => REDACTED });
  return buf;
}

/** Header name -> value, where a value may be a secret (a token, ${NAME} from the environment, a file's): names shown, values not. */
class SecretHeaders {
  constructor(headers) {
    Object.assign(this, headers);
  }

  toJSON() {
    return Object.fromEntries(Object.keys(this).map((name) => [name, REDACTED]));
  }

  [inspect.custom]() {
    return `SecretHeaders ${inspect(this.toJSON())}`;
  }
}

/** A URL's password (http://user:secret@proxy:3128) as [redacted]. */
const withoutPassword = (url) => (typeof url === 'string' ? url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#:@]*):[^/?#@]*@/i, `$1:${REDACTED}@`) : url);

/** The forward proxy settings (config/backend.js compileProxy): a proxy URL may carry a user and password. */
class ProxySettings {
  constructor({
    forHttps, forHttp, noProxy, from,
  }) {
    this.forHttps = forHttps;
    this.forHttp = forHttp;
    this.noProxy = noProxy;
    this.from = from;
  }

  toJSON() {
    return {
      forHttps: withoutPassword(this.forHttps), forHttp: withoutPassword(this.forHttp), noProxy: this.noProxy, from: this.from,
    };
  }

  [inspect.custom]() {
    return `ProxySettings ${inspect(this.toJSON())}`;
  }
}

module.exports = {
  SecretHeaders, ProxySettings, redactedBytes, REDACTED,
};
