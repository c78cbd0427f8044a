'use strict';

// The HTTP client limit, run as its own process: the gateway's engine calling the backend
// directly at concurrency C, with the same request the gateway would send. Prints JSON: rate,
// p50, p99, errors, and its own CPU per query.
//   node bench/direct-http.js <engine> <backendUrl> <concurrency> <seconds>

const { performance } = require('node:perf_hooks');
const { createEngine, engineOptions } = require('../gateway/backend/engines');
const { DEFAULTS } = require('../gateway/config');
const { queryJson } = require('../gateway/backend/request');
const { newHistogram } = require('../simulator/stats');
const { QUERY } = require('./harness');

// The physical limit is a bare POST (none); BENCH_DIRECT_DEADLINE=controller gives each request an
// AbortController and a 250 ms timer, =timeout an AbortSignal.timeout(250), to price a deadline.
const DEADLINE = process.env.BENCH_DIRECT_DEADLINE || 'none';

async function main() {
  const [engineName, url, concurrencyArg, secondsArg] = process.argv.slice(2);
  const concurrency = Number(concurrencyArg);
  const engine = createEngine(engineName, engineOptions(DEFAULTS.backend));
  const origin = new URL(url).origin;
  const headers = { 'content-type': 'application/json', accept: 'application/json' };
  const hist = newHistogram();
  let measuring = false;
  let done = 0;
  let errors = 0;
  let stop = false;
  let seq = 0;
  const worker = async () => {
    while (!stop) {
      const id = ++seq;
      const t0 = performance.now();
      const body = JSON.stringify(queryJson({ ...QUERY, invokeId: id, routerCallKey: id, duplicate: false, noScriptReply: false }));
      let timer = null;
      let signal;
      if (DEADLINE === 'timeout') signal = AbortSignal.timeout(250);
      else if (DEADLINE === 'controller') {
        const controller = new AbortController();
        timer = setTimeout(() => controller.abort(), 250);
        signal = controller.signal;
      }
      try {
        const res = await engine.request({ origin, path: `/query/${QUERY.subtype}`, method: 'POST', headers, body, signal });
        JSON.parse(res.text);
        if (res.status !== 200) errors++;
      } catch {
        errors++;
      }
      if (timer !== null) clearTimeout(timer);
      if (measuring) {
        done++;
        hist.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
      }
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  await new Promise((r) => setTimeout(r, 500));
  measuring = true;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, Number(secondsArg) * 1000));
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  measuring = false;
  const counted = done;
  stop = true;
  await Promise.all(workers);
  await engine.close();
  const ms = (p) => hist.getValueAtPercentile(p) / 1000;
  const result = { rate: (counted * 1000) / elapsed, p50: ms(50), p99: ms(99), errors, cpuUsPerQuery: (cpu.user + cpu.system) / counted };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main();
