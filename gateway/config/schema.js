'use strict';

// The gateway's configuration as one JSON Schema: every key, its type, range and default. From it
// come the defaults (defaultsOf), the GED145_* environment variables (`x-env`), the `ged145
// gateway` flags and their usage lines (`x-flag`), and the validation with its messages (`x-must`
// where "must be ..." needs more than the type and range say; validate.js). `ged145 config
// schema` prints it without those x- annotations (publicSchema) for editors and other validators.
// What a schema cannot say (a deadline below the router's timeout, a URL's shape, an allowlist
// entry) is checked after it, in index.js. Its parts: the node builders (schema-nodes.js), the
// routes and the definitions they share with the top level (schema-routes.js), the top level here.

const {
  DEFAULT_MAX_MESSAGE_LENGTH, MESSAGE_TYPES, STATUS, MAX_UINT32, IDLE_TIMEOUT_RANGE, ROUTER_REQUEST_TIMEOUT_MS,
} = require('../../lib/protocol');
const { ENGINE_NAMES } = require('../backend/engines');
const { XML_BUDGETS } = require('../backend/formats');
const { CHARSETS } = require('../answer/charset');
const { V8_MAX_SEMI_SPACE_MB } = require('../../lib/heap');
const {
  int, bool, oneOf, path, section, flag, intMap,
} = require('./schema-nodes');
const { DEFINITIONS, ROUTE, CANDIDATE } = require('./schema-routes');

const SCHEMA_URI = 'http://json-schema.org/draft-07/schema#';
const SCHEMA_ID = 'https://ged145.invalid/schemas/gateway.json';

/** Timers stay far below setTimeout's 2^31-1 ms, past which Node fires them after 1 ms. */
const LIMITS = section('per-session and listener limits', {
  maxMessageLength: int(1024, 1024 * 1024, DEFAULT_MAX_MESSAGE_LENGTH, { description: 'largest frame body read or written' }),
  maxInFlight: int(1, 100_000, 1000, { description: 'queries in flight per session; the rest wait in order' }),
  maxQueuedBytes: int(0, 1024 * 1024 * 1024, 1024 * 1024, {
    description: 'bytes of queries waiting past maxInFlight per session; past it the socket is not read',
  }),
  maxOutboundBytes: int(4096, 1024 * 1024 * 1024, 1024 * 1024, { description: 'unread reply bytes per session; past it the router is disconnected' }),
  maxSessions: int(1, 10_000, 64, { description: 'open sessions; further OPEN_REQs get E_AG_HOST_OFFLINE' }),
  maxConnections: int(1, 100_000, 2048, { description: 'TCP connections' }),
  openTimeoutMs: int(100, 600_000, 15_000, { description: 'a connection must send OPEN_REQ within this' }),
  handshakeTimeoutMs: int(100, 600_000, 5000, {
    description: 'TLS listener: a handshake must finish within this (and within openTimeoutMs)',
  }),
  maxHandshakes: int(1, 100_000, 256, {
    description: 'TLS listener: handshakes in progress; past it the oldest of the address holding the most is closed',
  }),
  maxHandshakesPerAddress: int(1, 100_000, 32, {
    description: 'TLS listener: handshakes in progress from one address; past it its oldest is closed',
  }),
  partialFrameTimeoutMs: int(100, 600_000, 10_000, { description: 'a started frame must complete within this' }),
  defaultIdleTimeoutMs: int(IDLE_TIMEOUT_RANGE.min, IDLE_TIMEOUT_RANGE.max, 60_000, {
    description: 'idle timeout when OPEN_REQ.IdleTimeout is 0 or out of range',
  }),
  closeLingerMs: int(0, 60_000, 2000, { description: "after our FIN, how long to read and discard while waiting for the router's" }),
  maxSubtypeLabels: int(0, 1000, 50, { description: 'metrics: subtype labels besides configured routes; the rest are "(other)"' }),
});

/**
 * OpenTelemetry traces (docs/tracing.md): each key mirrors a standard OTEL_* variable, which wins
 * over it (gateway/ops/telemetry/settings.js reads them as the OpenTelemetry SDKs do). Read at start.
 */
const TELEMETRY = section('OpenTelemetry export (docs/tracing.md); the standard OTEL_* environment overrides it', {
  traces: section('traces of queries and backend requests, sent by OTLP (HTTP or gRPC); off unless an endpoint or the otlp exporter is set', {
    exporter: {
      enum: [null, 'otlp', 'none'], default: null,
      description: 'otlp or none; null: otlp when an endpoint is set (OTEL_TRACES_EXPORTER)', 'x-must': "must be 'otlp', 'none' or null",
    },
    endpoint: {
      type: ['string', 'null'], pattern: '^https?://', default: null,
      description: 'the collector\'s traces URL, such as http://127.0.0.1:4318/v1/traces, or for grpc http://127.0.0.1:4317 '
        + '(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; OTEL_EXPORTER_OTLP_ENDPOINT is a base that /v1/traces is added to over HTTP)',
      'x-must': 'must be an http:// or https:// URL or null',
    },
    protocol: oneOf(['http/protobuf', 'http/json', 'grpc'], 'http/protobuf', {
      description: 'OTEL_EXPORTER_OTLP_PROTOCOL', 'x-must': "must be 'http/protobuf', 'http/json' or 'grpc'",
    }),
    headers: {
      type: 'object', additionalProperties: { type: 'string' }, default: {},
      description: 'sent with every export, such as an API key (OTEL_EXPORTER_OTLP_HEADERS)',
    },
    timeoutMs: int(1, 600_000, 10_000, { description: 'one export, its retries included (OTEL_EXPORTER_OTLP_TIMEOUT)' }),
    serviceName: {
      type: 'string', minLength: 1, default: 'ged145', description: 'the service.name resource attribute (OTEL_SERVICE_NAME)',
    },
    resourceAttributes: {
      type: 'object', additionalProperties: { type: 'string' }, default: {},
      description: 'more resource attributes, such as deployment.environment.name (OTEL_RESOURCE_ATTRIBUTES)',
    },
    sampler: oneOf(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'],
      'parentbased_always_on', { description: 'OTEL_TRACES_SAMPLER' }),
    samplerArg: {
      type: 'number', minimum: 0, maximum: 1, default: 1, description: 'the ratio of the traceidratio samplers (OTEL_TRACES_SAMPLER_ARG)',
      'x-must': 'must be a number from 0 to 1',
    },
    maxQueueSize: int(1, 1_000_000, 2048, { description: 'spans waiting for export; past it a span is dropped and counted (OTEL_BSP_MAX_QUEUE_SIZE)' }),
    maxExportBatchSize: int(1, 1_000_000, 512, { description: 'spans per export (OTEL_BSP_MAX_EXPORT_BATCH_SIZE)' }),
    scheduledDelayMs: int(1, 600_000, 5000, { description: 'the longest a span waits for its batch (OTEL_BSP_SCHEDULE_DELAY)' }),
    callerData: bool(false, {
      description: "put the caller's data in spans (the filled backend URL; CLID, DN, CED, CDPD on the query span); "
        + 'off: a span carries the route\'s URL template only',
    }),
  }),
});

const SCHEMA = {
  $schema: SCHEMA_URI,
  $id: SCHEMA_ID,
  title: 'ged145 gateway configuration',
  description: 'docs/configuration.md. Defaults <- this file <- GED145_* environment <- command line flags.',
  type: 'object',
  additionalProperties: false,
  definitions: DEFINITIONS,
  properties: {
    $schema: { type: 'string', description: 'the schema this file follows (`ged145 config schema` prints it), for editors' },
    host: {
      type: 'string', minLength: 1, default: '0.0.0.0', description: 'address the GED-145 listener binds',
      'x-env': 'GED145_HOST', 'x-flag': flag('host', 'ADDR', 'address to listen on'), 'x-must': 'must be an address',
    },
    port: int(0, 65535, 5000, {
      description: 'GED-145 port; 0 = any free port',
      'x-env': 'GED145_PORT', 'x-flag': flag('port', 'N', 'GED-145 port for the routers'), 'x-must': 'must be a port number 0..65535',
    }),
    protocol: section('the protocol compatibility profile (docs/protocol.md)', {
      versions: {
        type: 'array', minItems: 1, items: { type: 'integer', minimum: 0, maximum: MAX_UINT32 }, default: [2],
        'x-must': 'must be a non-empty list of version numbers',
      },
      messageTypes: intMap(MESSAGE_TYPES, 'the number on the wire of each message type'),
      status: intMap(STATUS, 'the number on the wire of each status code'),
    }),
    deadlineMs: int(1, 60_000, 250, {
      description: 'per-query deadline; below routerRequestTimeoutMs',
      'x-env': 'GED145_DEADLINE_MS', 'x-flag': flag('deadline', 'MS', `per-query deadline, below the router's ${ROUTER_REQUEST_TIMEOUT_MS}`),
      'x-must': 'must be an integer of milliseconds from 1 to 60000',
    }),
    routerRequestTimeoutMs: int(1, 600_000, ROUTER_REQUEST_TIMEOUT_MS, {
      description: "the router's RequestTimeout", 'x-must': 'must be an integer of milliseconds from 1 to 600000',
    }),
    duplicates: oneOf(['forward', 'answer-empty'], 'forward', {
      description: 'a query flagged Duplicate: forward it, or answer it empty without the backend', 'x-must': "must be 'forward' or 'answer-empty'",
    }),
    answers: section('how answer text is written for the router (docs/protocol.md, text)', {
      charset: oneOf(CHARSETS, 'ascii', {
        description: "the bytes VARs, CED, CDPD and ECC values may hold: 'ascii' (GED-145's text), or 'latin1' on plain sessions "
          + '(how the router reads request text; an encrypted session stays ASCII)',
        'x-must': "must be 'ascii' or 'latin1'",
      }),
      transliterate: bool(true, {
        description: 'a character outside the charset becomes its ASCII base letters ("José" -> "Jose"); false: "?"',
      }),
    }),
    backend: section('the REST backend of the default query contract', {
      url: {
        type: ['string', 'null', 'array'], items: { type: 'string' }, minItems: 1, default: null,
        description: 'base URL of the default contract, or a list of them (failover or balance)',
        'x-env': 'GED145_BACKEND_URL', 'x-flag': flag('backend', 'URL', 'REST backend base URL for the default query contract'),
        'x-must': 'must be an http:// or https:// URL (or a list of them)',
      },
      strategy: oneOf(['failover', 'balance'], 'failover', { 'x-must': "must be 'failover' or 'balance'" }),
      hedge: { $ref: '#/definitions/hedge' },
      engine: oneOf(ENGINE_NAMES, 'undici', {
        'x-env': 'GED145_ENGINE', 'x-flag': flag('engine', 'NAME', `HTTP client: ${ENGINE_NAMES.join(' or ')}`),
      }),
      connections: int(1, 10_000, 64, { description: 'keep-alive connections per backend origin' }),
      headers: {
        type: 'object',
        additionalProperties: { type: 'string' },
        default: {},
        description: "sent on every request to backend.url's origins (and a route's with backendCredentials), never elsewhere; ${NAME} reads the environment",
      },
      headerFiles: {
        type: 'object',
        additionalProperties: { type: 'string', minLength: 1 },
        default: {},
        description: 'headers whose values are secrets, read from files: {"X-Api-Key": "api-key"} ($CREDENTIALS_DIRECTORY first for a relative path); '
          + "sent where backend.headers are, to backend.url's origins only",
      },
      maxResponseBytes: int(1, 64 * 1024 * 1024, 64 * 1024, { 'x-must': 'must be a positive integer' }),
      xml: section('what an XML answer may hold before it is parsed: more is refused unread (bad_xml), as parsing it would hold every session', {
        maxElements: int(1, 1_000_000, XML_BUDGETS.maxElements, { description: 'elements in one XML answer' }),
        maxAttributes: int(0, 1_000_000, XML_BUDGETS.maxAttributes, { description: 'attributes in one XML answer, all elements together' }),
        maxDepth: int(1, 10_000, XML_BUDGETS.maxDepth, { description: 'elements open inside one another' }),
      }),
      statuses: { $ref: '#/definitions/statuses' },
      errorPath: {
        type: 'string', minLength: 1, default: 'error', description: "the default contract: where the API's own error text is in a body",
      },
      retryAfter: section('a 429 or 503 with Retry-After pauses that route\'s calls to that origin '
        + '(queries get stale, fallback or E_AG_HOST_ERROR1 at once), then one probe', {
        enabled: bool(true),
        maxMs: int(1000, 3_600_000, 30_000, { description: 'the longest pause a Retry-After can ask for' }),
      }),
      adaptiveRate: section('429s slow a route down: a rate per route per origin learnt from them (AIMD); calls over it get their substitute at once', {
        enabled: bool(true),
        minPerSecond: int(1, 100_000, 1, { description: 'the learnt rate never goes below this' }),
        releaseAfterMs: int(1000, 3_600_000, 60_000, { description: 'after this long without a 429, the route sends unlimited again' }),
      }),
      keepAliveTimeoutMs: int(100, 600_000, 4000, {
        description: "an idle backend connection is closed after this, unless the server's Keep-Alive: timeout= says sooner; "
          + 'below the 5 s of Node and Apache servers',
      }),
      tls: section('TLS to the backend (every origin and the token endpoint); verification is always on', {
        ca: path({ description: "PEM: the CA(s) that signed the backend's certificate, besides the system's" }),
        cert: path({ description: 'PEM: a client certificate, for mutual TLS' }),
        key: path({ description: 'PEM: its private key' }),
        servername: {
          type: ['string', 'null'],
          minLength: 1,
          default: null,
          description: "the name to ask for (SNI) and check the certificate against, when not the URL's host",
        },
      }),
      auth: {
        $ref: '#/definitions/auth',
        description: "how requests to backend.url's origins authenticate (a route's with backendCredentials too; a route's own auth replaces it): "
          + 'oauth2 (client credentials), basic or bearer; null or false = none',
      },
      proxy: {
        type: ['string', 'null'],
        default: null,
        description: 'an HTTP forward proxy for backend traffic (CONNECT for https); null = HTTPS_PROXY/HTTP_PROXY/NO_PROXY',
        'x-must': 'must be an http://host:port proxy URL or null',
      },
    }),
    routes: {
      type: 'object', additionalProperties: ROUTE, default: {}, description: 'per-subtype routes (docs/rest-contract.md)',
      'x-must': 'must be an object of subtype -> route',
    },
    candidates: {
      type: 'object', additionalProperties: CANDIDATE, default: {}, 'x-must': 'must be an object of name -> candidate route',
      description: 'named routes under test, that routes.<subtype>.shadow and .canary send queries to (docs/safe-change.md)',
    },
    fallback: { $ref: '#/definitions/fallback' },
    cache: { $ref: '#/definitions/cache' },
    breaker: { $ref: '#/definitions/breaker' },
    retry: section('a request that surely never reached the backend is tried again, on another origin', {
      enabled: bool(true),
      minRemainingMs: int(0, 60_000, 50),
    }),
    limits: LIMITS,
    allowlist: {
      type: 'array', items: { type: 'string' }, default: [], description: 'router addresses and CIDR ranges; empty = any',
      'x-must': 'must be a list of addresses and CIDR ranges',
    },
    admin: section('the admin HTTP listener', {
      host: {
        type: 'string', default: '127.0.0.1',
        'x-must': 'must be the address to serve /sessions and /metrics on (127.0.0.1, an internal address), not {value}',
      },
      port: {
        type: ['integer', 'null'], minimum: 0, maximum: 65535, default: 8080, description: 'null = no admin listener',
        'x-env': 'GED145_ADMIN_PORT', 'x-flag': flag('admin-port', 'N', 'admin HTTP port: /health /ready /sessions /metrics'),
        'x-must': 'must be a port number or null',
      },
      hosts: {
        type: 'array',
        items: { type: 'string', pattern: '^\\.?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$',
          'x-must': 'must be a host name (no port, no scheme), such as gw1.example.com or .ops.example.com',
        },
        default: [],
        description: 'names the admin port answers besides IP addresses, localhost, this machine\'s hostname and admin.host; '
          + '".example.com" takes its subdomains; others get 421 (DNS rebinding)',
        'x-must': 'must be a list of host names',
      },
    }),
    log: section('logging', {
      level: oneOf(['error', 'warn', 'info', 'debug'], 'info', {
        'x-env': 'GED145_LOG_LEVEL', 'x-flag': flag('log-level', 'L', 'error | warn | info | debug'), 'x-must': 'must be error, warn, info or debug',
      }),
      file: path({
        'x-env': 'GED145_LOG_FILE', 'x-flag': flag('log-file', 'FILE', 'also write JSON log lines to FILE (rotated at 10 MB, 5 kept)'),
      }),
      redact: bool(false, {
        'x-env': 'GED145_REDACT', 'x-flag': flag('redact', null, 'keep CLID, CED, CDPD, DN and variable values out of the logs'),
      }),
      console: bool(true),
      traceFrames: int(0, 100_000, 0, {
        'x-flag': flag('trace-frames', 'N', 'log the first N frames of each session each way, as hex and decoded'),
      }),
    }),
    decisions: section('the decision log: one JSON line per sampled query, found again by `ged145 why` (docs/safe-change.md); '
      + 'off while file is null, and nothing is subscribed then. Read at start only', {
      file: path({
        description: 'where the records go: rotated at 10 MB, 5 files kept, the older ones gzipped; with --workers each worker '
          + 'writes its own beside it (decisions.w1.jsonl)',
        'x-env': 'GED145_DECISIONS_FILE', 'x-flag': flag('decisions-file', 'FILE', 'write one JSON line per query to FILE, for `ged145 why`'),
      }),
      sample: {
        type: 'number', minimum: 0, maximum: 1, default: 1,
        description: 'the share of calls written, chosen by RouterCallDay and RouterCallKey: a call is written from both router sides or from neither',
        'x-must': 'must be a number from 0 to 1',
      },
    }),
    workers: int(1, 64, 1, {
      'x-env': 'GED145_WORKERS', 'x-flag': flag('workers', 'N', 'worker processes sharing the port'),
    }),
    shutdownTimeoutMs: int(0, 600_000, 5000, { description: 'on SIGTERM, how long to wait for queries in flight' }),
    memory: section('V8 heap sizing, read at start only', {
      youngGenerationMb: int(1, V8_MAX_SEMI_SPACE_MB, 8, { 'x-must': `must be an integer from 1 to ${V8_MAX_SEMI_SPACE_MB} (MB)` }),
      heapGrowthPercent: int(0, 1000, 50, { 'x-must': 'must be an integer from 0 (V8 decides) to 1000' }),
    }),
    warmup: bool(true, { description: 'run synthetic queries through the code before listening', 'x-env': 'GED145_WARMUP' }),
    des: section('DES field encryption', {
      keyFile: path({
        'x-env': 'GED145_DES_KEY_FILE', 'x-flag': flag('des-key-file', 'FILE', 'the DES private key for encrypted sessions (or GED145_DES_KEY)'),
      }),
      require: bool(false, { description: 'refuse unencrypted sessions' }),
    }),
    telemetry: TELEMETRY,
    tls: section('listen with TLS instead of plain TCP', {
      cert: path({ 'x-flag': flag('tls-cert', 'FILE', 'listen with TLS: certificate (PEM)') }),
      key: path({ 'x-flag': flag('tls-key', 'FILE', '... and its private key (PEM)') }),
      ca: path({ 'x-flag': flag('tls-ca', 'FILE', '... and require client certificates signed by this CA') }),
    }),
    // What operators see of the router's view and of the objectives (docs/reports.md).
    routerLateTimeoutMs: int(1, 600_000, 100, {
      description: "the router's LateTimeout: a reply later than this counts in the half-hour view's LatesToHalf (docs/reports.md)",
      'x-must': 'must be an integer of milliseconds from 1 to 600000',
    }),
    slo: {
      type: 'object',
      default: {},
      description: 'objectives per route (subtype): the share of its queries answered within latencyMs over windowDays (docs/reports.md)',
      additionalProperties: section('the objective of one route', {
        objective: {
          type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 100, default: 99.9,
          description: 'percent of queries answered within latencyMs', 'x-must': 'must be a percentage above 0 and below 100, such as 99.9',
        },
        latencyMs: int(1, 600_000, 200, { description: 'an answer later than this is a bad event' }),
        windowDays: int(1, 90, 30, { description: 'the window the error budget is counted over' }),
      }),
      'x-must': 'must be an object of routes, each {objective, latencyMs, windowDays}',
    },
  },
};

/** The node a property refers to, following a local $ref. */
function deref(node) {
  if (node && node.$ref) return DEFINITIONS[node.$ref.split('/').pop()];
  return node;
}

/** The default value of a node: its own `default`, else an object of its properties' defaults. */
function defaultsOf(node) {
  const n = deref(node);
  if (Object.hasOwn(n, 'default')) return structuredClone(n.default);
  if (n.properties === undefined) return undefined;
  const out = {};
  for (const [k, child] of Object.entries(n.properties)) {
    if (k === '$schema') continue;
    const v = defaultsOf(child);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** The defaults of a section whose own default is null or absent (cache, breaker, backend.hedge: the settings when it is on). */
function sectionDefaults(name) {
  const n = name.split('.').reduce((node, k) => deref(deref(node).properties[k]), SCHEMA);
  return Object.fromEntries(Object.entries(n.properties).map(([k, child]) => [k, defaultsOf(child)]));
}

/** Every [dotted key, node] of the schema, sections walked into (routes' and answers' keys are the user's). */
function* leaves(node = SCHEMA, prefix = '') {
  for (const [k, child] of Object.entries(deref(node).properties || {})) {
    if (k === '$schema') continue;
    const n = deref(child);
    const key = `${prefix}${k}`;
    if (n.properties !== undefined && k !== 'fallback' && k !== 'auth' && k !== 'messageTypes' && k !== 'status') yield* leaves(n, `${key}.`);
    else yield [key, n];
  }
}

/** The schema as printed for editors and other validators: no x- annotations; env and flag in the description. */
function publicSchema() {
  const strip = (node) => {
    if (Array.isArray(node)) return node.map(strip);
    if (node === null || typeof node !== 'object') return node;
    const out = {};
    for (const [k, v] of Object.entries(node)) if (!k.startsWith('x-')) out[k] = k === 'properties' || k === 'definitions' ? mapValues(v, strip) : strip(v);
    const how = [node['x-env'], node['x-flag'] && `--${node['x-flag'].name}`].filter(Boolean);
    if (how.length > 0) out.description = `${out.description ? `${out.description} ` : ''}(${how.join(', ')})`;
    return out;
  };
  return strip(SCHEMA);
}
/**
 * The `ged145 gateway` flags that set a config key, from the x-flag annotations:
 * {name, arg, help, key, type, dflt}; arg null for a switch.
 */
const FLAGS = Object.freeze([...leaves()].filter(([, n]) => n['x-flag']).map(([key, n]) => ({
  ...n['x-flag'], key, type: [].concat(n.type || 'string')[0], dflt: n.default,
})));

const mapValues = (o, f) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));

/** The settings' top-level keys ($schema is for editors, not a setting). */
const SETTING_KEYS = Object.freeze(Object.keys(SCHEMA.properties).filter((k) => k !== '$schema'));

module.exports = {
  SCHEMA, SETTING_KEYS, FLAGS, defaultsOf, sectionDefaults, leaves, publicSchema,
};
