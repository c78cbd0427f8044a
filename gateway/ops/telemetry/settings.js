'use strict';

// The trace settings in force: the configuration's `telemetry.traces` with the standard
// OpenTelemetry environment over it, read the way every OpenTelemetry SDK reads it
// (opentelemetry-specification, "Environment Variable Specification" and the OTLP exporter's
// "Configuration"). The environment wins, as GED145_* variables win over the file. A variable
// that cannot be read is named in one warning and ignored, as the SDKs do: telemetry never
// stops a gateway from starting.
//
// Traces are on when the exporter is `otlp`, or unset with an endpoint given (the SDKs' default
// exporter is otlp; here it also needs somewhere to send to, so that a gateway whose operator never
// asked for traces sends none). OTEL_SDK_DISABLED=true or the exporter `none` turn them off.
//
// OTLP/HTTP appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT; OTLP/gRPC takes the endpoint as it is
// (the service's path is gRPC's own), so the base is resolved once the protocol is known.

const SAMPLERS = Object.freeze([
  'always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio',
]);
const PROTOCOLS = Object.freeze(['http/protobuf', 'http/json', 'grpc']);
const TRACES_PATH = 'v1/traces';
/** Where the SDKs send when the exporter is otlp and no endpoint is given, by protocol. */
const DEFAULT_ENDPOINT = Object.freeze({ http: `http://localhost:4318/${TRACES_PATH}`, grpc: 'http://localhost:4317' });

/** `key1=value1,key2=value2` with percent-encoded values (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES). */
function parseList(text) {
  const out = {};
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new Error(`has an item that is not key=value`); // not quoted: it may be a secret
    out[decodeURIComponent(item.slice(0, eq).trim())] = decodeURIComponent(item.slice(eq + 1).trim());
  }
  return out;
}

function httpUrl(text) {
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('is not an http:// or https:// URL');
  return url;
}

/** OTEL_EXPORTER_OTLP_ENDPOINT is a base: the signal's path is appended to it (the spec's rule). */
function tracesUrlOf(base) {
  const url = httpUrl(base);
  return `${url.origin}${url.pathname.replace(/\/?$/, '/')}${TRACES_PATH}${url.search}`;
}

/** Each variable: [name, apply(value, out)], in the order the spec ranks them (a signal's own name last, so it wins). */
const VARIABLES = [
  ['OTEL_TRACES_EXPORTER', (v, out) => {
    const names = v.split(',').map((s) => s.trim().toLowerCase());
    if (names.includes('none')) out.exporter = 'none';
    else if (names.includes('otlp')) out.exporter = 'otlp';
    else throw new Error(`names no exporter this gateway has (otlp or none): traces stay off`);
  }],
  ['OTEL_EXPORTER_OTLP_ENDPOINT', (v, out) => { out.base = httpUrl(v).href; }],
  ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', (v, out) => {
    out.endpoint = httpUrl(v).href;
    out.base = null; // the signal's own endpoint wins over the base
  }],
  ['OTEL_EXPORTER_OTLP_PROTOCOL', (v, out) => { out.protocol = protocolOf(v); }],
  ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', (v, out) => { out.protocol = protocolOf(v); }],
  ['OTEL_EXPORTER_OTLP_HEADERS', (v, out) => { out.headers = { ...out.headers, ...parseList(v) }; }],
  ['OTEL_EXPORTER_OTLP_TRACES_HEADERS', (v, out) => { out.headers = { ...out.headers, ...parseList(v) }; }],
  ['OTEL_EXPORTER_OTLP_TIMEOUT', (v, out) => { out.timeoutMs = positive(v); }],
  ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', (v, out) => { out.timeoutMs = positive(v); }],
  ['OTEL_RESOURCE_ATTRIBUTES', (v, out) => { out.resourceAttributes = { ...out.resourceAttributes, ...parseList(v) }; }],
  ['OTEL_SERVICE_NAME', (v, out) => { out.serviceName = v; }],
  ['OTEL_TRACES_SAMPLER', (v, out) => {
    if (!SAMPLERS.includes(v.trim())) throw new Error(`is not one of ${SAMPLERS.join(', ')}`);
    out.sampler = v.trim();
  }],
  ['OTEL_TRACES_SAMPLER_ARG', (v, out) => {
    const n = Number(v);
    if (v.trim() === '' || !(n >= 0 && n <= 1)) throw new Error('is not a ratio from 0 to 1');
    out.samplerArg = n;
  }],
  ['OTEL_BSP_MAX_QUEUE_SIZE', (v, out) => { out.maxQueueSize = positive(v); }],
  ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE', (v, out) => { out.maxExportBatchSize = positive(v); }],
  ['OTEL_BSP_SCHEDULE_DELAY', (v, out) => { out.scheduledDelayMs = positive(v); }],
];

function protocolOf(v) {
  const p = v.trim();
  if (!PROTOCOLS.includes(p)) throw new Error(`is not ${PROTOCOLS.join(', ')}`);
  return p;
}

function positive(v) {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error('is not a positive integer');
  return n;
}

const truthy = (v) => v !== undefined && v.trim().toLowerCase() === 'true';

/**
 * The settings in force: {on, ...traces settings}, and the problems met in the environment (one
 * line each, for a warning). traces: the configuration's telemetry.traces (its schema's defaults filled in).
 */
function resolveTraces(traces, env = process.env) {
  const out = {
    ...traces, headers: { ...traces.headers }, resourceAttributes: { ...traces.resourceAttributes }, base: null,
  };
  const problems = [];
  for (const [name, apply] of VARIABLES) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    try {
      apply(value, out);
    } catch (err) {
      if (name === 'OTEL_TRACES_EXPORTER') out.exporter = 'none';
      // A header's value is a secret (an API key): its variable is named, never shown.
      problems.push(`${name}${name.endsWith('_HEADERS') ? '' : `=${value}`} ${err.message}`);
    }
  }
  // The spec: OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES; the config's serviceName likewise.
  if (env.OTEL_SERVICE_NAME === undefined || env.OTEL_SERVICE_NAME === '') {
    const fromAttributes = env.OTEL_RESOURCE_ATTRIBUTES ? out.resourceAttributes['service.name'] : undefined;
    if (fromAttributes !== undefined) out.serviceName = fromAttributes;
  }
  delete out.resourceAttributes['service.name'];
  const grpc = out.protocol === 'grpc';
  if (out.base !== null) out.endpoint = grpc ? out.base : tracesUrlOf(out.base);
  delete out.base;
  if (out.exporter === 'otlp' && out.endpoint === null) out.endpoint = grpc ? DEFAULT_ENDPOINT.grpc : DEFAULT_ENDPOINT.http;
  // gRPC names its service in its own path: a path in the endpoint means nothing to it, and is dropped.
  if (grpc && out.endpoint !== null) out.endpoint = new URL(out.endpoint).origin;
  out.on = !truthy(env.OTEL_SDK_DISABLED) && out.exporter !== 'none' && out.endpoint !== null;
  return { traces: out, problems };
}

module.exports = { resolveTraces };
