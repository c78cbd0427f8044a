'use strict';

// Turns one QUERY_REQ into one backend call and classifies the result:
//   {kind: 'ok', answer}            -> QUERY_RESP status 0
//   {kind: 'app-error', text}       -> FAILURE_CONF E_AG_HOST_ERROR2 (a 4xx, or a module's refusal)
//   {kind: 'host-error', reason, text} -> FAILURE_CONF E_AG_HOST_ERROR1 (5xx, bad JSON, unreachable, ...)
// It never throws: every path ends in one of the three.

const { queryJson, fillTemplate, jsonPath, mapResponse } = require('./routes');
const { createEngine } = require('./engines');

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

const hostError = (reason, text) => ({ kind: 'host-error', reason, text });

class Backend {
  constructor(config) {
    this.routes = config.compiledRoutes;
    this.engine = createEngine(config.backend.engine, {
      connections: config.backend.connections,
      maxResponseBytes: config.backend.maxResponseBytes,
    });
    this.setBaseUrl(config.backend.url);
    this.baseHeaders = { ...JSON_HEADERS, ...lowerKeys(config.backend.headers) };
  }

  /** The default contract's base URL; settable after start (npm start embeds rest-sim on a free port). */
  setBaseUrl(url) {
    if (url === null || url === undefined) {
      this.origin = null;
      return;
    }
    const m = /^(https?:\/\/[^/?#]+)(\/[^?#]*)?/.exec(url);
    this.origin = m[1];
    this.basePath = (m[2] || '').replace(/\/+$/, '');
  }

  async call(q, signal) {
    const route = q.subtype === undefined ? undefined : this.routes[q.subtype];
    if (route === undefined) return this.callContract(q, signal);
    if (route.kind === 'module') return callModule(route, q, signal);
    return this.callRoute(route, q, signal);
  }

  async callContract(q, signal) {
    if (this.origin === null) return hostError('no-backend', 'no backend configured');
    const path = q.subtype === undefined ? `${this.basePath}/query` : `${this.basePath}/query/${encodeURIComponent(q.subtype)}`;
    return this.send({
      origin: this.origin, path, method: 'POST', headers: this.baseHeaders, body: JSON.stringify(queryJson(q)), signal,
    }, null, 'error');
  }

  async callRoute(route, q, signal) {
    const path = fillTemplate(route.template, q);
    const headers = { ...this.baseHeaders, ...route.headers };
    const body = route.sendBody ? JSON.stringify(queryJson(q)) : undefined;
    return this.send({ origin: route.template.origin, path, method: route.method, headers, body, signal }, route.mapping, route.errorPath);
  }

  async send(request, mapping, errorPath) {
    let res;
    try {
      res = await this.engine.request(request);
    } catch (err) {
      return hostError(err.reason || 'error', `backend ${err.reason || 'error'}`);
    }
    const { status, text } = res;
    if (status >= 200 && status < 300) {
      let json;
      try {
        json = JSON.parse(text);
      } catch {
        return hostError('bad-json', 'backend answered with a body that is not JSON');
      }
      if (json === null || typeof json !== 'object' || Array.isArray(json)) {
        return hostError('bad-json', 'backend answered with JSON that is not an object');
      }
      return { kind: 'ok', answer: mapping ? mapResponse(mapping, json) : json };
    }
    if (status >= 400 && status < 500) return { kind: 'app-error', text: errorText(text, errorPath, status), status };
    return hostError(`http-${status}`, `backend HTTP ${status}`);
  }

  close() {
    return this.engine.close();
  }
}

/** The text for the ERROR tag of a 4xx: the body's error field, else the body, else the status. */
function errorText(text, errorPath, status) {
  try {
    const json = JSON.parse(text);
    const v = jsonPath(json, errorPath);
    if (typeof v === 'string' && v.length > 0) return v;
  } catch {
    // not JSON: fall through
  }
  return text && text.length > 0 && text.length < 256 ? text : `backend HTTP ${status}`;
}

async function callModule(route, q, signal) {
  try {
    const answer = await route.handle(queryJson(q), { signal });
    if (answer === null || typeof answer !== 'object') return { kind: 'ok', answer: {} };
    return { kind: 'ok', answer };
  } catch (err) {
    if (signal.aborted) return hostError('aborted', 'backend aborted');
    const status = err && Number(err.status || err.statusCode);
    if ((err && err.appError) || (status >= 400 && status < 500)) return { kind: 'app-error', text: String(err.message || 'rejected') };
    return hostError('module-error', 'handler module failed');
  }
}

function lowerKeys(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj || {})) out[k.toLowerCase()] = v;
  return out;
}

module.exports = { Backend };
