'use strict';

// Where the backend's own secrets may go. backend.headers, backend.headerFiles and backend.auth
// are the API's of backend.url: they are sent to its origins (every one of a failover or balance
// list) and to no other, so that a route or a handler's ctx.request to a third party never
// carries the CRM's API key or bearer token. A route whose API needs them on another origin says
// so ("backendCredentials": true). The token endpoint gets its client credentials only.

class CredentialScope {
  /** urls: backend.url's base URLs (their origins are the scope). */
  constructor(urls) {
    this.origins = new Set(urls.map(originKey));
    this.seen = new Map(); // origin as written -> in scope: ctx.request names origins at run time
  }

  /** Whether a request to origin ("https://crm.example:8443") may carry the backend's own headers and credentials. */
  includes(origin) {
    let inScope = this.seen.get(origin);
    if (inScope === undefined) {
      inScope = this.origins.has(originKey(origin));
      if (this.seen.size < MAX_SEEN) this.seen.set(origin, inScope);
    }
    return inScope;
  }
}

const MAX_SEEN = 1000; // origins a handler may name: remembered up to this many, computed beyond

/** An origin as the URL standard writes it: host in lower case, no default port ("HTTPS://CRM:443" -> "https://crm"). */
function originKey(url) {
  try {
    return new URL(url).origin;
  } catch {
    return String(url).toLowerCase();
  }
}

module.exports = { CredentialScope };
