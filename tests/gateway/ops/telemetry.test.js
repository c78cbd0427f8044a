'use strict';

// Trace settings read as the OpenTelemetry SDKs read them, the SDK's spans on the wire to a real
// OTLP/HTTP receiver (protobuf and JSON), the span subscriber on the diagnostics channels, and a
// collector that is down: spans dropped and counted, one log line, nothing waits.
// The end-to-end tests with a real gateway process are in traces.test.js.

const assert = require('node:assert/strict');
const dc = require('node:diagnostics_channel');
const { execFileSync } = require('node:child_process');
const prom = require('prom-client');
const { loadConfig } = require('../../../gateway/config');
const { resolveTraces } = require('../../../gateway/ops/telemetry/settings');
const { startTracing } = require('../../../gateway/ops/telemetry');
const { startOtlpReceiver, startOtlpGrpcReceiver } = require('../../helpers/otlp-receiver');
const { captureLogger } = require('../../helpers/stack');
const { freePort } = require('../../helpers/real-backend');
const { ROOT } = require('../../helpers/spawn');

const DEFAULTS = () => loadConfig({ env: {} }).telemetry.traces;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

/** A gateway as the subscriber sees one: the messages' owner, and a metrics registry. */
const fakeGateway = () => ({ metrics: { registry: new prom.Registry() }, backend: {} });

/** Publishes what the core publishes for one query with one backend request (docs/diagnostics.md's fields). */
function publishQuery(gateway, {
  invokeId = 7, clid = '5551000001', outcome = 'ok', status = null, requestStatus = 200, attempts = 1,
  template = '/customers/{clid}', path = `/customers/${clid}`,
} = {}) {
  const ch = (name) => dc.channel(name);
  const session = { id: 3, peer: '127.0.0.1:5000', side: 'A' };
  const query = {
    invokeId, subtype: 'cust', side: 'A', receivedAt: performance.now(), fields: { clid, dn: '8005550199', vars: { 1: 'secret-var' } }, labels: {},
  };
  ch('ged145:query:start').publish({ gateway, session, query });
  const sent = [];
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const headers = {};
    const request = {
      kind: 'query', route: 'cust', method: 'GET', origin: 'http://127.0.0.1:9', template, path, attempt,
      setHeader: (name, value) => { headers[name.toLowerCase()] = value; },
    };
    request.setHeader('traceparent', '00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01'); // one already there: replaced
    ch('ged145:backend:request:start').publish({ gateway, query: query.fields, request }); // as the core does: the decoded message
    if (attempt < attempts) {
      ch('ged145:backend:request:error').publish({ gateway, request, error: new Error(`connect ECONNREFUSED for ${clid}`), reason: 'connect' });
    } else {
      ch('ged145:backend:request:headers').publish({ gateway, request, statusCode: requestStatus });
      ch('ged145:backend:request:end').publish({
        gateway, request, statusCode: requestStatus, ms: 3, result: requestStatus === 200 ? 'ok' : 'app_error',
      });
    }
    sent.push(headers);
  }
  ch('ged145:query:settle').publish({
    gateway, session, query, outcome, status, ms: 4, late: false,
  });
  return { query, sent };
}

describe('traces: settings from the configuration and the standard OTEL_* environment', () => {
  it('are off with neither: no endpoint, no exporter', () => {
    assert.equal(resolveTraces(DEFAULTS(), {}).traces.on, false);
    assert.equal(resolveTraces(DEFAULTS(), { OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).traces.on, false);
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT is a base that /v1/traces is added to; the traces endpoint is taken as it is and wins', () => {
    const base = resolveTraces(DEFAULTS(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).traces;
    assert.equal(base.on, true);
    assert.equal(base.endpoint, 'http://collector:4318/v1/traces');
    assert.equal(resolveTraces(DEFAULTS(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/otlp/' }).traces.endpoint, 'http://c:4318/otlp/v1/traces');
    const own = resolveTraces(DEFAULTS(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/custom',
    }).traces;
    assert.equal(own.endpoint, 'http://tempo:4318/custom');
  });

  it('OTEL_TRACES_EXPORTER=otlp alone sends to the SDKs\' default endpoint; none and OTEL_SDK_DISABLED turn them off', () => {
    assert.equal(resolveTraces(DEFAULTS(), { OTEL_TRACES_EXPORTER: 'otlp' }).traces.endpoint, 'http://localhost:4318/v1/traces');
    assert.equal(resolveTraces(DEFAULTS(), { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).traces.on, false);
    assert.equal(resolveTraces(DEFAULTS(), { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).traces.on, false);
    const file = { ...DEFAULTS(), endpoint: 'http://c:4318/v1/traces' };
    assert.equal(resolveTraces(file, {}).traces.on, true);
    assert.equal(resolveTraces(file, { OTEL_TRACES_EXPORTER: 'none' }).traces.on, false);
  });

  it('reads headers and resource attributes as key=value lists; OTEL_SERVICE_NAME wins over service.name in the attributes', () => {
    const { traces } = resolveTraces(DEFAULTS(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s%3Dcret, x-tenant=t1',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=prod,service.name=from-attributes',
      OTEL_SERVICE_NAME: 'gw-east',
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    assert.deepEqual(traces.headers, { 'x-api-key': 's=cret', 'x-tenant': 't1' });
    assert.deepEqual(traces.resourceAttributes, { 'deployment.environment.name': 'prod' });
    assert.equal(traces.serviceName, 'gw-east');
    assert.equal(traces.sampler, 'traceidratio');
    assert.equal(traces.samplerArg, 0.25);
    assert.equal(traces.protocol, 'http/json');
    assert.equal(resolveTraces(DEFAULTS(), { OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes' }).traces.serviceName, 'from-attributes');
    assert.equal(resolveTraces(DEFAULTS(), {}).traces.serviceName, 'ged145');
  });

  it('a variable it cannot read is named and ignored; a header\'s value is never shown', () => {
    const { traces, problems } = resolveTraces(DEFAULTS(), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_TRACES_SAMPLER: 'sometimes',
      OTEL_TRACES_SAMPLER_ARG: '2',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/thrift',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key-without-equals-sign-s3cret',
    });
    assert.equal(traces.on, true);
    assert.equal(traces.sampler, 'parentbased_always_on');
    assert.equal(traces.protocol, 'http/protobuf');
    assert.equal(problems.length, 4);
    assert.match(problems.join('\n'), /OTEL_TRACES_SAMPLER=sometimes/);
    assert.doesNotMatch(problems.join('\n'), /s3cret/);
    const zipkin = resolveTraces(DEFAULTS(), { OTEL_TRACES_EXPORTER: 'zipkin', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' });
    assert.equal(zipkin.traces.on, false);
    assert.match(zipkin.problems[0], /zipkin/);
  });

  it('grpc takes the endpoint as it is (no /v1/traces, a path dropped), 4317 by default', () => {
    const grpc = (env, file = DEFAULTS()) => resolveTraces(file, { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', ...env });
    assert.equal(grpc({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317' }).traces.endpoint, 'http://collector:4317');
    assert.equal(grpc({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4317/otlp/' }).traces.endpoint, 'https://collector:4317');
    assert.equal(grpc({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4317', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317' }).traces.endpoint, 'http://tempo:4317');
    assert.equal(grpc({ OTEL_TRACES_EXPORTER: 'otlp' }).traces.endpoint, 'http://localhost:4317');
    assert.equal(grpc({}, { ...DEFAULTS(), endpoint: 'http://c:4317/v1/traces' }).traces.endpoint, 'http://c:4317');
    const { traces, problems } = grpc({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317' });
    assert.deepEqual([traces.on, traces.protocol, problems], [true, 'grpc', []]);
    // The same base over HTTP still gets the signal's path.
    assert.equal(resolveTraces(DEFAULTS(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).traces.endpoint, 'http://c:4318/v1/traces');
  });

  it('the schema refuses a bad telemetry.traces value by name', () => {
    const { schemaProblems } = require('../../../gateway/config/validate');
    assert.match(schemaProblems({ telemetry: { traces: { endpoint: 'collector:4318' } } }, {}).join('\n'), /^telemetry\.traces\.endpoint must be an http/);
    assert.match(schemaProblems({ telemetry: { traces: { samplerArg: 3 } } }, {}).join('\n'), /^telemetry\.traces\.samplerArg must be a number from 0 to 1/);
    assert.deepEqual(schemaProblems({ telemetry: { traces: { endpoint: 'http://c:4318/v1/traces', callerData: true } } }, {}), []);
  });
});

describe('traces: off costs nothing', () => {
  it('without settings, nothing subscribes and the SDK is never loaded', () => {
    const script = `
      const dc = require('node:diagnostics_channel');
      const { startTracing } = require('./gateway/ops/telemetry');
      const config = require('./gateway/config').loadConfig({ env: {} });
      const t = startTracing(config, { log: { warn() {}, info() {} }, env: {} });
      const names = ['ged145:query:start', 'ged145:query:settle', 'ged145:backend:request:start'];
      console.log(JSON.stringify({
        tracing: t, subscribed: names.filter((n) => dc.hasSubscribers(n)),
        sdk: Object.keys(require.cache).filter((k) => k.includes('@opentelemetry')).length,
      }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' }));
    assert.deepEqual(out, { tracing: null, subscribed: [], sdk: 0 });
  });

  it('on over HTTP, the gRPC exporter and grpc-js are not loaded; chosen, they are', () => {
    const loaded = (protocol) => {
      const script = `
        const { startTracing } = require('./gateway/ops/telemetry');
        const config = require('./gateway/config').loadConfig({ env: {} });
        const t = startTracing(config, { log: { warn() {}, info() {} }, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: '${protocol}' } });
        const keys = Object.keys(require.cache);
        console.log(JSON.stringify({ on: t !== null, grpc: keys.filter((k) => k.includes('grpc')).length > 0 }));
        t.stop(); // then nothing is left to hold the process: it ends by itself`;
      return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' }));
    };
    assert.deepEqual(loaded('http/protobuf'), { on: true, grpc: false });
    assert.deepEqual(loaded('grpc'), { on: true, grpc: true });
  });
});

describe('traces: spans on the wire to a real OTLP/gRPC receiver', function () {
  this.timeout(20_000);
  let receiver;
  let t;
  before(async () => { receiver = await startOtlpGrpcReceiver(); });
  after(async () => receiver.close());
  afterEach(async () => { if (t) await t.stop(); });

  it('the query and backend spans arrive by gRPC, the headers as metadata, the resource with its instance id', async () => {
    const gateway = fakeGateway();
    t = startTracing(loadConfig({ env: {} }), {
      log: captureLogger(),
      env: {
        OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=t1', OTEL_SERVICE_NAME: 'gw-grpc',
      },
    }).attach(gateway, { registry: gateway.metrics.registry });
    const { query } = publishQuery(gateway, { invokeId: 21, outcome: 'deadline', status: 'E_AG_HOST_ERROR1' });
    const spans = await receiver.waitForSpans((s) => s.length >= 2);
    assert.deepEqual(receiver.errors, []);
    assert.equal(receiver.requests[0].headers['x-tenant'], 't1');
    const q = spans.find((s) => s.kind === 2);
    const b = spans.find((s) => s.kind === 3);
    assert.equal(q.name, 'ged145 query cust');
    assert.equal(b.parentSpanId, q.spanId);
    assert.equal(q.traceId, query.labels.trace_id);
    assert.equal(q.attributes['rpc.system'], 'ged145');
    assert.equal(q.attributes['rpc.method'], 'cust');
    assert.equal(q.attributes['network.peer.address'], '127.0.0.1');
    assert.equal(q.attributes['error.type'], 'deadline');
    assert.equal(q.status.code, 2);
    assert.equal(q.resource['service.name'], 'gw-grpc');
    assert.match(q.resource['service.instance.id'], /^[0-9a-f-]{36}$/);
  });
});

describe('traces: spans from the diagnostics channels, on the wire to a real OTLP/HTTP receiver', function () {
  this.timeout(20_000);
  let receiver;
  const running = [];
  before(async () => { receiver = await startOtlpReceiver(); });
  after(async () => receiver.close());
  afterEach(async () => {
    while (running.length > 0) await running.pop().stop();
    receiver.spans.length = 0;
  });

  function trace(env, gateway = fakeGateway(), log = captureLogger()) {
    const t = startTracing(loadConfig({ env: {} }), { log, env: { OTEL_BSP_SCHEDULE_DELAY: '20', ...env } });
    t.attach(gateway, { registry: gateway.metrics.registry });
    running.push(t);
    return { t, gateway, log };
  }

  for (const protocol of ['http/protobuf', 'http/json']) {
    it(`${protocol}: a query span above its backend span, one traceparent naming the backend span, no caller data`, async () => {
      const { gateway } = trace({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_SERVICE_NAME: 'gw-test',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=t1', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
      });
      const { query, sent } = publishQuery(gateway);
      const spans = await receiver.waitForSpans((s) => s.length >= 2);
      assert.deepEqual(receiver.errors, []);
      assert.equal(receiver.requests.at(-1).contentType, protocol === 'http/json' ? 'application/json' : 'application/x-protobuf');
      assert.equal(receiver.requests.at(-1).headers['x-tenant'], 't1');
      const q = spans.find((s) => s.name === 'ged145 query cust');
      const b = spans.find((s) => s.name === 'GET /customers/{clid}');
      assert.ok(q && b, spans.map((s) => s.name).join(', '));
      assert.equal(q.kind, 2); // SPAN_KIND_SERVER
      assert.equal(b.kind, 3); // SPAN_KIND_CLIENT
      assert.equal(b.traceId, q.traceId);
      assert.equal(b.parentSpanId, q.spanId);
      assert.equal(q.parentSpanId, '');
      assert.equal(query.labels.trace_id, q.traceId);
      const [, traceId, spanId] = TRACEPARENT.exec(sent[0].traceparent);
      assert.deepEqual([traceId, spanId], [b.traceId, b.spanId]);
      // The RPC server conventions: the custom system, the subtype as the method, the router as client and peer; no error.type for an answer.
      assert.deepEqual(q.attributes, {
        'rpc.system': 'ged145',
        'rpc.method': 'cust',
        'client.address': '127.0.0.1',
        'client.port': 5000,
        'network.peer.address': '127.0.0.1',
        'network.peer.port': 5000,
        'network.transport': 'tcp',
        'ged145.query.subtype': 'cust',
        'ged145.query.invoke_id': 7,
        'ged145.session.id': 3,
        'ged145.query.side': 'A',
        'ged145.query.outcome': 'ok',
      });
      assert.deepEqual(b.attributes, {
        'http.request.method': 'GET',
        'server.address': '127.0.0.1',
        'server.port': 9,
        'url.scheme': 'http',
        'url.full': 'http://127.0.0.1:9/customers/REDACTED',
        'url.template': '/customers/{clid}',
        'ged145.backend.kind': 'query',
        'ged145.backend.route': 'cust',
        'http.response.status_code': 200,
        'ged145.backend.result': 'ok',
      });
      assert.equal(q.resource['service.name'], 'gw-test');
      assert.equal(q.resource['deployment.environment.name'], 'test');
      assert.equal(q.resource['telemetry.sdk.language'], 'nodejs');
      assert.match(q.resource['service.instance.id'], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/); // a UUID v4
      assert.doesNotMatch(JSON.stringify(spans, (k, v) => (typeof v === 'bigint' ? String(v) : v)), /5551000001|8005550199|secret-var/);
    });
  }

  it('a retry is a span of its own with its error type and resend count; failures set the span status; callerData opts in', async () => {
    const { gateway } = trace({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url }, fakeGateway());
    const { t: optedIn, gateway: other } = (() => {
      const g = fakeGateway();
      const tr = startTracing(loadConfig({ env: {} }), {
        log: captureLogger(), env: { OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'opted-in' },
      }).attach(g, { registry: g.metrics.registry });
      tr.spans.callerData = true;
      running.push(tr);
      return { t: tr, gateway: g };
    })();
    assert.ok(optedIn);
    const { sent } = publishQuery(gateway, {
      invokeId: 8, attempts: 2, requestStatus: 503, outcome: 'host_error', status: 'E_AG_HOST_ERROR1',
    });
    publishQuery(other, { invokeId: 9 });
    const spans = await receiver.waitForSpans((s) => s.length >= 5);
    assert.equal(sent.length, 2);
    const q = spans.find((s) => s.attributes['ged145.query.invoke_id'] === 8);
    const tries = spans.filter((s) => s.parentSpanId === q.spanId).sort((a, b) => Number(a.startNs - b.startNs));
    assert.equal(tries.length, 2);
    assert.equal(tries[0].attributes['error.type'], 'connect');
    assert.equal(tries[0].status.code, 2); // STATUS_CODE_ERROR
    assert.equal(tries[0].status.message, 'connect'); // the reason, never the error's text (it can quote the URL)
    assert.equal(tries[1].attributes['http.request.resend_count'], 1);
    assert.equal(tries[1].attributes['error.type'], '503');
    assert.equal(q.status.code, 2);
    assert.equal(q.attributes['ged145.query.status'], 'E_AG_HOST_ERROR1');
    assert.equal(q.attributes['error.type'], 'host_error');
    for (const [i, h] of sent.entries()) assert.equal(TRACEPARENT.exec(h.traceparent)[2], tries[i].spanId);
    const opted = spans.filter((s) => s.resource['service.name'] === 'opted-in');
    assert.equal(opted.find((s) => s.kind === 2).attributes['ged145.query.clid'], '5551000001');
    assert.equal(opted.find((s) => s.kind === 3).attributes['url.full'], 'http://127.0.0.1:9/customers/5551000001');
  });

  it('a secret written into a route\'s query string reaches no span, callerData or not: url.full is the URL sent, its values REDACTED', async () => {
    const { gateway } = trace({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'default' });
    const other = fakeGateway();
    const opted = startTracing(loadConfig({ env: {} }), {
      log: captureLogger(), env: { OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'opted-in' },
    }).attach(other, { registry: other.metrics.registry });
    opted.spans.callerData = true;
    running.push(opted);
    const url = {
      template: '/customers/{clid}/calls?since=today&acct={vars.1}&api_key=k-9f2Secret&flag',
      path: '/customers/5551000001/calls?since=today&acct=secret-var&api_key=k-9f2Secret&flag',
    };
    publishQuery(gateway, { invokeId: 11, ...url });
    publishQuery(other, { invokeId: 12, ...url });
    const spans = await receiver.waitForSpans((s) => s.filter((x) => x.kind === 3).length >= 2);
    const client = (service) => spans.find((s) => s.kind === 3 && s.resource['service.name'] === service);
    const template = '/customers/{clid}/calls?since=REDACTED&acct={vars.1}&api_key=REDACTED&REDACTED';
    for (const service of ['default', 'opted-in']) {
      assert.equal(client(service).name, `GET ${template}`);
      assert.equal(client(service).attributes['url.template'], template);
    }
    assert.equal(client('default').attributes['url.full'], 'http://127.0.0.1:9/customers/REDACTED/calls?since=REDACTED&acct=REDACTED&api_key=REDACTED&REDACTED');
    assert.equal(client('opted-in').attributes['url.full'], 'http://127.0.0.1:9/customers/5551000001/calls?since=REDACTED&acct=REDACTED&api_key=REDACTED&REDACTED');
    assert.doesNotMatch(JSON.stringify(spans, (k, v) => (typeof v === 'bigint' ? String(v) : v)), /k-9f2Secret/);
  });

  it('counts only its own gateway\'s queries, and a token request (no query) of its own as a root span', async () => {
    const { gateway } = trace({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url });
    publishQuery(fakeGateway(), { invokeId: 99 }); // another gateway in this process (the warm-up's)
    const headers = {};
    const token = {
      kind: 'token', route: null, method: 'POST', origin: 'https://idp.example:8443', template: '/oauth/token', attempt: 1,
      setHeader: (n, v) => { headers[n] = v; },
    };
    dc.channel('ged145:backend:request:start').publish({ gateway: { gateway }, query: null, request: token });
    dc.channel('ged145:backend:request:end').publish({
      gateway: { gateway }, request: token, statusCode: 200, ms: 2, result: 'ok',
    });
    const spans = await receiver.waitForSpans((s) => s.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(spans.map((s) => s.name), ['POST /oauth/token']);
    assert.equal(spans[0].parentSpanId, '');
    assert.equal(spans[0].attributes['server.port'], 8443);
    assert.match(headers.traceparent, TRACEPARENT);
  });

  it('always_off: no span is exported, and each backend request still gets one traceparent (not sampled)', async () => {
    const { gateway } = trace({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_off' });
    const { query, sent } = publishQuery(gateway);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(receiver.spans.length, 0);
    assert.match(sent[0].traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    assert.equal(query.labels.trace_id, sent[0].traceparent.split('-')[1]);
  });

  it('a collector that is down: every span dropped is counted, one log line, stop() bounded', async () => {
    const down = `http://127.0.0.1:${await freePort()}/v1/traces`;
    const { gateway, log, t } = trace({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: down, OTEL_BSP_MAX_QUEUE_SIZE: '4', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2' });
    for (let i = 0; i < 20; i++) publishQuery(gateway, { invokeId: i }); // 40 spans
    const started = Date.now();
    await t.stop();
    running.length = 0;
    assert.ok(Date.now() - started < 5000);
    const counted = await gateway.metrics.registry.getSingleMetric('ged145_trace_spans_dropped_total').get();
    const by = Object.fromEntries(counted.values.map((v) => [v.labels.reason, v.value]));
    assert.equal((by.queue_full || 0) + (by.export_failed || 0) + (by.shutdown || 0), 40, JSON.stringify(by));
    assert.ok(by.queue_full > 0, JSON.stringify(by));

    const warnings = log.lines.filter((l) => l.level === 'warn');
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(warnings[0].message, /span\(s\) dropped.*queries are not affected/);
  });
});
