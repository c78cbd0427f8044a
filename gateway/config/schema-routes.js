'use strict';

// The configuration schema's routes (routes.<subtype>) and the definitions they share with the top
// level: an answer's shape, fallback, cache, auth, statuses and breaker (schema.js puts them
// together). An HTTP status maps to an outcome kind (backend/outcome.js KIND); a route is one of
// the route kinds (gateway/route-kinds.js).

const { VAR_COUNT, VAR_NUMBER } = require('../../lib/protocol');
const {
  KEY_FIELDS, TARGET_FIELDS, TARGET_PATTERN, listed,
} = require('../../lib/query-fields');
const { KIND } = require('../backend/outcome');
const { int, bool } = require('./schema-nodes');

/** The outcome kinds an HTTP status can be mapped to (statuses): ok, app_error or host_error. */
const OUTCOME_KINDS = Object.values(KIND);

const answerProperties = {
  vars: {
    type: 'object',
    propertyNames: { pattern: `^${VAR_NUMBER}$` },
    additionalProperties: { type: ['string', 'number', 'boolean'] },
    'x-must': `must be an object of peripheral variables 1..${VAR_COUNT}`,
  },
  ecc: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
  eccArrays: { type: 'array' },
  ced: { type: ['string', 'number'] },
  cdpd: { type: ['string', 'number'] },
};

const DEFINITIONS = {
  fallback: {
    type: ['object', 'null', 'boolean'],
    description: 'an answer for when the backend fails, in the REST contract\'s response shape; null or false = none',
    additionalProperties: false,
    properties: { ...answerProperties, on4xx: bool(false, { description: 'also answer a 4xx with it' }) },
    not: { const: true },
    default: null,
    'x-must': 'must be an answer object {"vars": {...}, "ecc": {...}} or null',
  },
  cache: {
    type: ['object', 'null', 'boolean'],
    description: 'the answer cache with serve-stale; null or false = off, true = these defaults',
    additionalProperties: false,
    properties: {
      ttlMs: int(1, 86_400_000, 30_000, { description: 'a younger answer answers without the backend' }),
      staleIfErrorMs: int(0, 7 * 86_400_000, 3_600_000, { description: 'past ttlMs, kept this much longer for when the backend fails' }),
      maxEntries: int(1, 10_000_000, 100_000),
      maxBytes: int(65_536, 64 * 1024 * 1024 * 1024, 64 * 1024 * 1024),
      key: {
        type: 'array',
        minItems: 1,
        items: { type: 'string' },
        default: ['subtype', 'clid'],
        'x-must': `must list request fields: ${listed(KEY_FIELDS)}`,
      },
      store: {
        type: ['string', 'null'], pattern: '^rediss?://[^/]+', default: null, 'x-must': 'must be a redis://host:port URL or null',
      },
      namespace: {
        type: ['string', 'null'],
        pattern: '^[A-Za-z0-9._-]{1,64}$',
        default: null,
        description: 'a name of this deployment in the cache keys, for a Redis shared by deployments whose routes send the same requests '
          + "to different services; null: the routes' fingerprints alone keep deployments apart",
        'x-must': 'must be 1 to 64 letters, digits, dots, dashes or underscores, or null',
      },
    },
    default: null,
    'x-must': 'must be an object or null',
  },
  hedge: {
    type: ['object', 'null', 'boolean'],
    description: 'with several backend.url origins: a query with no answer after afterMs sends one more request to the next healthy '
      + 'origin, the first answer wins (docs/safe-change.md); null or false = off, true = these defaults',
    additionalProperties: false,
    properties: {
      afterMs: int(1, 30_000, 80, { description: 'how long the first request has to answer before the hedge goes; at most half of deadlineMs' }),
      maxPercent: int(1, 100, 25, { description: 'hedges per 100 queries at most, over the last 10 s' }),
    },
    default: null,
    'x-must': 'must be an object, true, false or null',
  },
  auth: {
    type: ['object', 'null', 'boolean'],
    description: 'how backend requests authenticate: oauth2 (client credentials), basic or bearer; null or false = none',
    additionalProperties: false,
    required: ['type'],
    properties: {
      type: { enum: ['oauth2', 'basic', 'bearer'], 'x-must': "must be 'oauth2', 'basic' or 'bearer'" },
      tokenUrl: { type: 'string', description: 'oauth2: the token endpoint (https://...)' },
      clientId: { type: 'string', minLength: 1 },
      clientSecret: { type: 'string', minLength: 1, description: 'a secret: ${NAME} reads the environment' },
      clientSecretFile: { type: 'string', minLength: 1, description: 'or a file holding it ($CREDENTIALS_DIRECTORY first for a relative path)' },
      scope: { type: 'string' },
      audience: { type: 'string' },
      clientAuth: { enum: ['basic', 'body'], description: 'oauth2: client credentials in an Authorization: Basic header (default) or in the form body' },
      username: { type: 'string', minLength: 1 },
      password: { type: 'string', minLength: 1 },
      passwordFile: { type: 'string', minLength: 1 },
      token: { type: 'string', minLength: 1 },
      tokenFile: { type: 'string', minLength: 1 },
    },
    not: { const: true },
    default: null,
    'x-must': 'must be an object {"type": "oauth2" | "basic" | "bearer", ...} or null',
  },
  statuses: {
    type: 'object',
    propertyNames: { pattern: '^[1-5][0-9][0-9]$' },
    additionalProperties: { enum: OUTCOME_KINDS },
    description: 'HTTP status -> outcome, over the defaults (docs/rest-contract.md: 2xx ok, 404 app_error, 401/403 unauthorized, '
      + "another 4xx app_error only with the API's error at errorPath, the rest host_error)",
    'x-must': `must map HTTP statuses ("404") to ${OUTCOME_KINDS.slice(0, -1).join(', ')} or ${OUTCOME_KINDS.at(-1)}`,
  },
  breaker: {
    type: ['object', 'null', 'boolean'],
    description: 'a circuit breaker per route per backend origin; false or null = off',
    additionalProperties: false,
    properties: {
      enabled: bool(true),
      failureRatio: {
        type: 'number', exclusiveMinimum: 0, maximum: 1, default: 0.5, 'x-must': 'must be a number above 0 and at most 1',
      },
      slowCallRatio: {
        type: 'number', exclusiveMinimum: 0, maximum: 1, default: 1, 'x-must': 'must be a number above 0 and at most 1',
      },
      minimumCalls: int(1, 100_000, 20),
      windowMs: int(100, 600_000, 1000),
      halfOpenAfterMs: int(100, 600_000, 500),
      maxHalfOpenAfterMs: int(100, 3_600_000, 2000),
      minOpenMs: int(0, 3_600_000, 5000, {
        description: 'with no other origin to take its calls, an open circuit closes on an answer only after this long: it never flaps faster',
      }),
    },
    'x-must': 'must be an object',
  },
};

// A route is one of three kinds, each a branch of its schema: a module route ({module, ...}), the
// default contract with settings of its own (only fallback, cache, breaker, statuses, errorPath),
// or a REST call ({url, ...}). config/routes.js compiles a route by its kind and checks nothing
// the schema says.
const AVAILABILITY_KEYS = ['fallback', 'cache', 'breaker'];
/** What a route sends to a candidate besides its live answer (docs/safe-change.md): any kind of route takes them. */
const CHANGE_KEYS = ['shadow', 'canary'];
const CONTRACT_ROUTE_KEYS = [...AVAILABILITY_KEYS, 'statuses', 'errorPath', ...CHANGE_KEYS];
const MODULE_ROUTE_KEYS = ['module', 'timeoutMs', 'auth', 'backendCredentials', 'idempotent', 'statuses', 'errorPath', ...AVAILABILITY_KEYS, ...CHANGE_KEYS];
/** A key a route of this kind does not take: "routes.x: unknown key 'url'" (validate.js), with a guess among the kind's keys. */
const onlyKeys = (keys, kind) => ({ propertyNames: { enum: keys }, 'x-kind': kind });
const ROUTE = {
  type: 'object',
  description: 'a REST call ({method, url, ...}), a module ({module}), or only its own fallback, cache, breaker, statuses or errorPath',
  additionalProperties: false,
  if: { properties: { module: true }, required: ['module'] },
  then: onlyKeys(MODULE_ROUTE_KEYS, 'a module route'),
  else: {
    if: { propertyNames: { enum: CONTRACT_ROUTE_KEYS } },
    else: {
      properties: { url: true },
      required: ['url'],
      'x-must': 'needs a url (a REST call) or a module',
      if: { properties: { format: { const: 'xml' } }, required: ['format'] },
      then: { properties: { response: true }, required: ['response'], 'x-must': 'needs a response mapping: an XML answer (format "xml") is read through one' },
    },
  },
  properties: {
    method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'get', 'post', 'put', 'patch', 'delete'] },
    url: { type: 'string', description: 'URL template: {clid}, {vars.1}, {ecc.NAME}... in the path and query' },
    headers: { type: 'object', additionalProperties: { type: 'string' }, description: "this route's own headers, over backend.headers where those are sent" },
    headerFiles: { type: 'object', additionalProperties: { type: 'string', minLength: 1 }, description: 'header values read from files (secrets)' },
    timeoutMs: { type: 'integer', minimum: 1 },
    auth: { $ref: '#/definitions/auth' },
    backendCredentials: {
      type: 'boolean',
      description: "true: send backend.headers, backend.headerFiles and backend.auth with this route's requests (a module's ctx.request too) "
        + "although their origin is not backend.url's; by default those go to backend.url's origins only",
    },
    statuses: { $ref: '#/definitions/statuses' },
    idempotent: { type: 'boolean', description: 'false: never send again after a connection broke (a route that changes state)' },
    response: {
      type: 'object',
      additionalProperties: { type: 'string' },
      propertyNames: { pattern: TARGET_PATTERN },
      description: '{"vars.1": "json.path", "ecc.NAME": "..."}',
      'x-must': `must map targets (vars.1..vars.${VAR_COUNT}, ecc.NAME, ${TARGET_FIELDS.join(', ')}) to JSON path strings`,
    },
    errorPath: { type: 'string', description: 'where the error text of an app_error answer is (default "error"; XML: "Envelope.Body.Fault.faultstring")' },
    format: {
      enum: ['json', 'xml'],
      description: 'how the answer is read: json (default), or xml (SOAP and other XML APIs; paths ignore namespace prefixes)',
      'x-must': "must be 'json' or 'xml'",
    },
    body: {
      type: ['string', 'object', 'array'],
      minLength: 1,
      description: '"query" (the query as JSON), "none", a JSON template, or a text template (a SOAP envelope) with {clid}, {vars.1}... placeholders',
      'x-must': 'must be "query", "none", a JSON template or a text template',
    },
    module: { type: 'string', description: 'a JS module exporting (query, {signal}) => answer' },
    fallback: { $ref: '#/definitions/fallback' },
    cache: { $ref: '#/definitions/cache' },
    breaker: { $ref: '#/definitions/breaker' },
    shadow: {
      type: 'object',
      description: "a sampled share of this subtype's queries is also sent to a candidate, and its answer compared with the live one; "
        + 'the router gets the live answer, never later for it',
      additionalProperties: false,
      required: ['candidate'],
      properties: {
        candidate: { type: 'string', minLength: 1, description: 'a name under candidates' },
        sample: {
          type: 'number', minimum: 0, maximum: 1, default: 1, description: 'the share of queries shadowed (0..1)', 'x-must': 'must be a number from 0 to 1',
        },
      },
      'x-must': 'must be an object {"candidate": NAME, "sample": 0..1}',
    },
    canary: {
      type: 'object',
      description: "the candidate answers the listed DN_STRINGs and percent of the others; it stops by itself when its failures exceed the live route's",
      additionalProperties: false,
      required: ['candidate'],
      properties: {
        candidate: { type: 'string', minLength: 1, description: 'a name under candidates' },
        dialedNumbers: {
          type: 'array', items: { type: 'string', minLength: 1 }, default: [], description: 'DN_STRINGs the candidate answers, whatever percent says',
        },
        percent: {
          type: 'number', minimum: 0, maximum: 100, default: 0, description: 'the share of other queries (0..100), by RouterCallDay and RouterCallKey',
          'x-must': 'must be a number from 0 to 100',
        },
        rollback: {
          type: 'object',
          additionalProperties: false,
          properties: {
            failureRate: {
              type: 'number', exclusiveMinimum: 0, maximum: 1, default: 0.05,
              description: "how far the candidate's share of failures may exceed the live route's", 'x-must': 'must be a number above 0 and at most 1',
            },
            minQueries: int(1, 1_000_000, 50, { description: 'the candidate answers at least this many queries in the window before it can be rolled back' }),
            windowS: int(1, 3600, 60, { description: 'the window the failures are counted over' }),
          },
          'x-must': 'must be an object {"failureRate", "minQueries", "windowS"}',
        },
      },
      'x-must': 'must be an object {"candidate": NAME, "dialedNumbers": [...], "percent": 0..100, "rollback": {...}}',
    },
  },
  'x-must': 'must be an object',
};

// A candidate is written as a route is (a REST call, a module, or the default contract: then with
// a backend URL of its own), without shadow or canary of its own.
const candidateProperties = Object.fromEntries(Object.entries(ROUTE.properties).filter(([k]) => !CHANGE_KEYS.includes(k)));
const CANDIDATE = {
  type: 'object',
  description: 'a route under test: a REST call ({url, ...}), a module ({module}), or the default contract at its own base URL ({backend})',
  additionalProperties: false,
  if: { properties: { module: true }, required: ['module'] },
  then: onlyKeys(MODULE_ROUTE_KEYS.filter((k) => !CHANGE_KEYS.includes(k)), 'a module candidate'),
  else: {
    if: { properties: { url: true }, required: ['url'] },
    then: { if: ROUTE.else.else.if, then: ROUTE.else.else.then },
    else: {
      properties: { backend: true },
      required: ['backend'],
      'x-must': 'needs a url (a REST call), a module, or a backend URL (the default contract)',
      ...onlyKeys(['backend', ...CONTRACT_ROUTE_KEYS.filter((k) => !CHANGE_KEYS.includes(k))], 'a default-contract candidate'),
    },
  },
  properties: {
    ...candidateProperties,
    backend: {
      type: 'string', pattern: '^https?://[^/?#]+[^?#]*$', description: 'the default contract\'s base URL for this candidate (POST {backend}/query/{subtype})',
      'x-must': 'must be an http:// or https:// URL without a query string',
    },
  },
  'x-must': 'must be an object',
};

module.exports = { DEFINITIONS, ROUTE, CANDIDATE };
