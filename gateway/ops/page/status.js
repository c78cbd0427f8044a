'use strict';

/* global SESSION_STATE, FAILED_LABELS, APP_ERROR */ // the core's session states and failed outcome labels, put in place by status-page.js

// The status page's script: asks /status once a second and redraws every part in place. Text
// that comes from routers or the backend (connectInfo, subtypes, errors) only ever becomes
// textContent, never markup.

(function statusPage() {
  const COLORS = {
    ok: '#15803d', cached: '#0e7490', stale: '#b45309', fallback: '#7c3aed', duplicate: '#65a30d',
    app_error: '#4f46e5', host_error: '#b91c1c', deadline: '#ea580c', aborted: '#6b7280', lost_router_gone: '#111827',
    invalid_key: '#be185d',
  };
  // app_error is the backend's own "no" (an unknown caller, a 404 the routing script expects): an
  // answer it chose, shown apart in its own colour and column, never counted as a failure.
  const FAILED = new Set(FAILED_LABELS);
  const CHOSEN = new Set([APP_ERROR]);
  const outcomeClass = (n) => (FAILED.has(n) ? 'bad' : CHOSEN.has(n) ? 'chosen' : 'ok');
  const WINDOW_S = 300;
  const $ = (id) => document.getElementById(id);

  /** An element with attributes and children (strings become text nodes). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') el.className = v;
      else if (k === 'style') el.setAttribute('style', v);
      else el.setAttribute(k, v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof window.Node ? c : String(c));
    return el;
  }
  const replace = (el, ...children) => el.replaceChildren(...children.flat());
  const row = (cells, head = false) => h('tr', null, cells.map((c) => (head ? h('th', null, c) : (c && c.num !== undefined
    ? h('td', { class: `num ${c.class || ''}` }, c.num) : h('td', c && c.class ? { class: c.class } : null, c && c.text !== undefined ? c.text : c)))));
  const num = (n, cls) => ({ num: n, class: cls });
  const fmt = (n, digits = 0) => (n === null || n === undefined || Number.isNaN(n)
    ? '-' : Number(n).toLocaleString('en-US', { maximumFractionDigits: digits }));
  const mb = (bytes) => fmt(bytes / 1048576, 1);
  const agoS = (s) => (s < 90 ? `${s} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : `${fmt(s / 3600, 1)} h ago`);
  const ago = (iso) => (iso ? agoS(Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000))) : '-');
  const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '-');
  /** An origin's circuit: its least healthy state, and the subtypes whose circuits are not closed. */
  const circuitText = (c) => {
    const notClosed = (c.routes || []).filter((r) => r.state !== 'closed').map((r) => r.route);
    if (notClosed.length === 0) return c.state;
    return `${c.state}: ${notClosed.slice(0, 3).join(', ')}${notClosed.length > 3 ? ` and ${notClosed.length - 3} more` : ''}`;
  };
  // The backend's state beside the age of its evidence, the age as the gateway counts it
  // (evidenceAgeS), whatever this browser's clock says: idle when no query judged it for a minute.
  const STATE_CLASS = { reachable: 'ok', failing: 'bad', idle: 'mute' };
  const evidence = (b) => (b.state === 'idle'
    ? (b.lastQueryAt ? `no queries since ${time(b.lastQueryAt)} (${agoS(b.evidenceAgeS)})` : 'no queries yet')
    : `since ${time(b.since)} · last query ${agoS(b.evidenceAgeS)}`);
  const duration = (s) => (s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${fmt(s / 3600, 1)} h`);

  /** p-th percentile (0..1) of bucket counts, as the bucket's upper bound (ms). */
  function percentile(counts, bounds, p) {
    const total = counts.reduce((a, b) => a + b, 0);
    if (total === 0) return null;
    let seen = 0;
    for (let i = 0; i < counts.length; i++) {
      seen += counts[i];
      if (seen >= p * total) return bounds[i] === null ? bounds[bounds.length - 2] * 2 : bounds[i];
    }
    return null;
  }
  // Keys are router text (a subtype may be "__proto__"): a map without a prototype.
  const sum = (objs) => objs.reduce((acc, o) => {
    for (const [k, v] of Object.entries(o)) acc[k] = (acc[k] || 0) + v;
    return acc;
  }, Object.create(null));
  const addBuckets = (list) => list.reduce((acc, b) => acc.map((n, i) => n + b[i]), list.length > 0 ? list[0].map(() => 0) : []);

  /** An SVG line chart of series [{name, color, values}] over xs (seconds), with a y scale from 0. */
  function lineChart(el, xs, series, unit) {
    const W = 600;
    const H = 170;
    const pad = { l: 44, r: 8, t: 8, b: 20 };
    const max = Math.max(1, ...series.flatMap((s) => s.values.filter((v) => v !== null)));
    const top = niceCeil(max);
    const x0 = xs.length > 0 ? xs[0] : 0;
    const span = Math.max(1, (xs.length > 0 ? xs[xs.length - 1] : 1) - x0);
    const px = (x) => pad.l + ((x - x0) / span) * (W - pad.l - pad.r);
    const py = (y) => H - pad.b - (y / top) * (H - pad.t - pad.b);
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    svg.setAttribute('preserveAspectRatio', 'none');
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      svg.append(e);
    };
    for (const f of [0, 0.5, 1]) {
      add('line', { x1: pad.l, x2: W - pad.r, y1: py(top * f), y2: py(top * f), stroke: '#e5e7eb' });
      add('text', { x: pad.l - 4, y: py(top * f) + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#6b7280' }, fmt(top * f));
    }
    add('text', { x: pad.l, y: H - 4, 'font-size': 10, fill: '#6b7280' }, `-${Math.round(span)} s`);
    add('text', { x: W - pad.r, y: H - 4, 'font-size': 10, fill: '#6b7280', 'text-anchor': 'end' }, `now (${unit})`);
    for (const s of series) {
      let d = '';
      s.values.forEach((v, i) => {
        if (v === null) return;
        d += `${d === '' || s.values[i - 1] === null ? 'M' : 'L'}${px(xs[i]).toFixed(1)},${py(v).toFixed(1)}`;
      });
      if (d !== '') add('path', { d, fill: 'none', stroke: s.color, 'stroke-width': 1.5, 'vector-effect': 'non-scaling-stroke' });
    }
    el.replaceChildren(svg);
  }
  function niceCeil(v) {
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  const legend = (el, series) => replace(el, series.map((s) => h('span', null, h('i', { style: `background:${s.color}` }), s.name)));

  function render(st) {
    const now = Math.floor(Date.now() / 1000);
    const seconds = st.history.seconds.filter((s) => s.t > now - WINDOW_S);
    const byT = new Map(seconds.map((s) => [s.t, s]));
    const xs = [];
    for (let t = now - WINDOW_S + 1; t <= now; t++) xs.push(t);
    const last = (n) => seconds.filter((s) => s.t > now - n);
    const outcomes5 = sum(seconds.map((s) => s.outcomes));
    const total5 = Object.values(outcomes5).reduce((a, b) => a + b, 0);
    const names = Object.keys(outcomes5).sort((a, b) => outcomes5[b] - outcomes5[a]);

    // Header and tiles
    const primary = st.processes[0];
    replace($('summary'), `${primary.version} · up ${duration(primary.uptimeS)} · ${st.listener.host}:${st.listener.port}${st.listener.tls ? ' (TLS)' : ''}`
      + ` · deadline ${st.listener.deadlineMs} ms · ${st.config.workers} worker${st.config.workers === 1 ? '' : 's'}`);
    const rate10 = last(10).reduce((a, s) => a + Object.values(s.outcomes).reduce((x, y) => x + y, 0), 0) / 10;
    const lat60 = addBuckets(last(60).map((s) => s.latency));
    const failed60 = sum(last(60).map((s) => s.outcomes));
    const all60 = Object.values(failed60).reduce((a, b) => a + b, 0);
    const bad60 = Object.entries(failed60).filter(([k]) => FAILED.has(k)).reduce((a, [, v]) => a + v, 0);
    const no60 = Object.entries(failed60).filter(([k]) => CHOSEN.has(k)).reduce((a, [, v]) => a + v, 0);
    const health = st.backend.length !== undefined ? st.backend : [st.backend];
    // The worst of the workers' states that rest on fresh evidence; the newest evidence beside it.
    const backendState = ['failing', 'reachable'].find((x) => health.some((b) => b.state === x)) || 'idle';
    const newest = health.filter((b) => b.state === backendState).sort((a, b) => (b.lastQueryAt || '').localeCompare(a.lastQueryAt || ''))[0];
    const open = st.sessions.filter((s) => s.state === SESSION_STATE.OPEN).length;
    const tile = (label, value, cls, note) => h('div', { class: 'tile' },
      h('small', null, label), h('b', { class: cls || '' }, value), note ? h('small', null, note) : null);
    replace($('tiles'),
      tile('queries/s (10 s)', fmt(rate10, 1)),
      tile('p50 / p99 (60 s)', `${fmt(percentile(lat60, st.history.bounds, 0.5))} / ${fmt(percentile(lat60, st.history.bounds, 0.99))} ms`),
      tile('failed (60 s)', all60 === 0 ? '-' : `${fmt((100 * bad60) / all60, 1)} %`, bad60 > 0 ? 'bad' : 'ok', `${fmt(bad60)} of ${fmt(all60)}`),
      tile('app error (60 s)', all60 === 0 ? '-' : `${fmt((100 * no60) / all60, 1)} %`, 'chosen', `the backend's "no": ${fmt(no60)}`),
      tile('sessions open', String(open), open > 0 ? 'ok' : 'warn', `${st.sessions.length} connected`),
      tile('in flight', fmt(st.sessions.reduce((a, s) => a + s.inFlight + (s.waiting || 0), 0))),
      tile('backend', backendState, STATE_CLASS[backendState] || 'bad',
        newest === undefined ? 'no worker answered' : backendState === 'idle' ? evidence(newest) : `last query ${agoS(newest.evidenceAgeS)}`));

    // Charts
    const rateSeries = names.map((n) => ({
      name: n, color: COLORS[n] || '#374151', values: xs.map((t) => (byT.has(t) ? byT.get(t).outcomes[n] || 0 : 0)),
    }));
    lineChart($('rate-chart'), xs, rateSeries, 'queries/s');
    legend($('rate-legend'), rateSeries);
    const latSeries = [
      { name: 'p50', color: '#2563eb', values: xs.map((t) => (byT.has(t) ? percentile(byT.get(t).latency, st.history.bounds, 0.5) : null)) },
      { name: 'p99', color: '#dc2626', values: xs.map((t) => (byT.has(t) ? percentile(byT.get(t).latency, st.history.bounds, 0.99) : null)) },
    ];
    lineChart($('latency-chart'), xs, latSeries, 'ms');
    legend($('latency-legend'), latSeries);

    // Sessions
    const multi = st.processes.length > 1;
    const sessionHead = ['peer', 'connect info', ...(multi ? ['worker'] : []), 'state', 'opened', 'queries', 'ok', 'app error', 'failed', 'in flight',
      'waiting', 'last heartbeat', 'DES', 'TLS'];
    replace($('sessions'), row(sessionHead, true), st.sessions.map((s) => row([s.peer, s.connectInfo || '-', ...(multi ? [String(s.pid)] : []),
      { text: s.state, class: s.state === SESSION_STATE.OPEN ? 'ok' : 'warn' }, time(s.openedAt), num(fmt(s.counters.queries)), num(fmt(s.counters.ok)),
      num(fmt(s.counters.appError || 0), 'chosen'), num(fmt(s.counters.failed), s.counters.failed > 0 ? 'bad' : ''),
      num(fmt(s.inFlight)), num(fmt(s.waiting || 0)), ago(s.lastHeartbeatAt), s.encrypted ? 'yes' : 'no', s.tls ? 'yes' : 'no'])));
    const refused = Object.entries(st.refused).filter(([, n]) => n > 0);
    replace($('refused'), refused.length === 0 ? 'no connection refused' : `connections refused: ${refused.map(([k, n]) => `${k} ${fmt(n)}`).join(', ')}`);

    // Backend
    const backendLat = addBuckets(last(60).map((s) => s.backendLatency));
    const classes = sum(last(60).map((s) => s.backend));
    const cache = health.map((b) => b.cache).find(Boolean);
    const cachedShare = total5 === 0 ? null : (100 * ((outcomes5.cached || 0) + (outcomes5.stale || 0))) / total5;
    replace($('backend'), health.map((b) => h('div', null,
      h('b', { class: STATE_CLASS[b.state] || 'bad' }, b.state), `${b.state === 'idle' ? ': ' : ' '}${evidence(b)}`,
      b.state === 'idle' && b.lastQueryAt ? ` · last seen ${b.lastState}` : '', b.pid ? ` (worker ${b.pid})` : '',
      b.lastError ? h('span', { class: 'mute' }, ` · last error: ${b.lastError}`) : null)),
    h('div', null, `requests (60 s): ${Object.entries(classes).map(([k, n]) => `${k} ${fmt(n)}`).join(', ') || 'none'}`
      + ` · p50 / p99 ${fmt(percentile(backendLat, st.history.bounds, 0.5))} / ${fmt(percentile(backendLat, st.history.bounds, 0.99))} ms`),
    h('div', null, cache ? `cache: ${fmt(cache.entries)} entries, ${mb(cache.bytes)} of ${mb(cache.maxBytes)} MiB${cache.store ? `, Redis ${cache.store}` : ''}`
      + ` · answered from it (5 min): ${fmt(cachedShare, 1)} %` : 'cache: off'));
    // One row per origin the backend has asked: its requests and failures, its circuit, its last error.
    const origins = health.flatMap((b) => {
      const names = [...new Set([...Object.keys(b.origins || {}), ...Object.keys(b.circuits || {})])];
      return names.map((origin) => ({
        origin, pid: b.pid, stats: (b.origins || {})[origin] || null, circuit: (b.circuits || {})[origin] || null,
      }));
    });
    replace($('circuits'), row(['origin', ...(multi ? ['worker'] : []), 'circuit', 'since', 'requests', 'failed', 'last error'], true),
      origins.map((o) => row([
        o.origin, ...(multi ? [String(o.pid)] : []),
        o.circuit ? { text: circuitText(o.circuit), class: o.circuit.state === 'closed' ? 'ok' : 'bad' } : 'off', o.circuit ? time(o.circuit.since) : '-',
        num(fmt(o.stats ? o.stats.requests : 0)), num(fmt(o.stats ? o.stats.failures : 0), o.stats && o.stats.failures > 0 ? 'bad' : ''),
        (o.stats && o.stats.lastError) || (o.circuit && o.circuit.lastError) || '-',
      ])));
    const auths = health.flatMap((b) => (b.auth || []).map((a) => ({ pid: b.pid, ...a })));
    replace($('auth'), auths.map((a) => h('div', null, `auth: ${a.type}${a.clientId ? ` ${a.clientId}` : ''}${a.tokenUrl ? ` at ${a.tokenUrl}` : ''}`
      + `${a.pid ? ` (worker ${a.pid})` : ''} · `, h('b', { class: a.state === 'failing' ? 'bad' : 'ok' }, a.state),
    a.expiresAt && a.expiresAt !== 'never' ? ` · token expires ${time(a.expiresAt)}` : '',
    a.tokenRequests !== undefined ? ` · ${fmt(a.tokenRequests)} token requests` : '',
    a.lastError ? h('span', { class: 'bad' }, ` · ${a.lastError}`) : null)));

    // Outcomes and subtypes, each with its own p50 / p99
    const subtypes = sum(seconds.map((s) => s.subtypes));
    const latencyOf = (key, name) => {
      // Own keys only: a subtype named "constructor" or "toString" is router text, not Object's.
      const b = addBuckets(seconds.map((s) => (s[key] && Object.hasOwn(s[key], name) ? s[key][name] : st.history.bounds.map(() => 0))));
      return num(`${fmt(percentile(b, st.history.bounds, 0.5))} / ${fmt(percentile(b, st.history.bounds, 0.99))}`);
    };
    replace($('outcomes'), row(['outcome or subtype', 'queries', 'share', 'p50 / p99 ms'], true),
      names.map((n) => row([{ text: n, class: outcomeClass(n) }, num(fmt(outcomes5[n])), num(`${fmt((100 * outcomes5[n]) / total5, 1)} %`),
        latencyOf('byOutcome', n)])),
      Object.entries(subtypes).sort((a, b) => b[1] - a[1]).map(([k, n]) => row([`subtype ${k}`, num(fmt(n)), num(`${fmt((100 * n) / total5, 1)} %`),
        latencyOf('bySubtype', k)])));

    // Processes, configuration, warnings
    replace($('processes'), row(['role', 'pid', 'CPU %', 'RSS MiB', 'heap MiB', 'loop lag mean / p99 ms', 'up'], true),
      st.processes.map((p) => (p.answering === false ? row([p.role, String(p.pid), { text: p.error || 'not answering', class: 'bad' }, '-', '-', '-', '-'])
        : row([p.role, String(p.pid), num(fmt(p.cpuPercent, 1)), num(mb(p.rssBytes)), num(mb(p.heapUsedBytes)),
          num(`${fmt(p.eventLoopLag.meanMs, 1)} / ${fmt(p.eventLoopLag.p99Ms, 1)}`), duration(p.uptimeS)]))));
    const reload = st.config.lastReload;
    replace($('config'), `config: ${st.config.file || 'none (defaults, environment, flags)'} · last reload: `,
      reload === null ? 'none' : h('span', { class: reload.ok ? 'ok' : 'bad' }, `${time(reload.at)} ${reload.ok ? 'applied' : `refused: ${reload.error}`}`));
    const lines = (list) => (list.length === 0 ? h('li', { class: 'mute' }, 'none') : list.slice().reverse()
      .map((w) => h('li', { class: w.level === 'error' ? 'bad' : 'warn' }, `${time(w.at)} ${w.message}`)));
    replace($('warnings'), lines(st.warnings));
    replace($('connection-warnings'), lines(st.connectionWarnings || []));
  }

  const SUMS = ['requests', 'answered', 'errors', 'lates', 'delaySumMs', 'refusals', 'canary', 'canaryErrors'];
  /** The router's half-hour view (docs/reports.md): one line per half hour and side, newest first, its subtypes added. */
  function renderHalfHours(view) {
    const lines = [];
    for (const p of view.periods.slice().reverse()) {
      const bySide = new Map();
      for (const r of p.rows) {
        let m = bySide.get(r.side);
        if (m === undefined) {
          m = { maxDelayMs: 0 };
          for (const k of SUMS) m[k] = 0;
          bySide.set(r.side, m);
        }
        for (const k of SUMS) m[k] += r[k];
        m.maxDelayMs = Math.max(m.maxDelayMs, r.maxDelayMs);
      }
      for (const [side, m] of bySide) {
        const replies = m.answered + m.errors;
        lines.push(row([p.local, side || '-', num(fmt(m.requests)), num(fmt(m.answered)), num(fmt(m.errors), m.errors > 0 ? 'bad' : ''),
          num(replies === 0 ? '-' : `${fmt(m.delaySumMs / replies)} / ${fmt(m.maxDelayMs)}`), num(fmt(m.lates), m.lates > 0 ? 'warn' : ''),
          num(fmt(m.refusals), m.refusals > 0 ? 'warn' : ''), num(`${fmt(m.canary)} / ${fmt(m.canaryErrors)}`, m.canaryErrors > 0 ? 'bad' : '')]));
      }
    }
    replace($('half-hours'), row(['half hour (local)', 'side', 'requests', 'answered', 'errors', 'avg / max delay ms', `late (> ${view.lateTimeoutMs} ms)`,
      'refused', 'canary / errors'], true), lines.length > 0 ? lines : row([{ text: 'nothing yet', class: 'mute' }]));
  }

  /** Objectives per route: budget left, burn rates over the alert windows, the alert that would fire. */
  function renderObjectives(list) {
    const burn = (o, w) => (o.burnRates[w] === null ? '-' : fmt(o.burnRates[w], 1));
    const budgetClass = (o) => (o.budgetLeftPercent < 0 ? 'bad' : o.budgetLeftPercent < 50 ? 'warn' : 'ok');
    replace($('objectives'), row(['route', 'objective', 'events', 'good', 'budget left', 'burn 5m / 1h', 'burn 30m / 6h', 'burn 2h / 1d', 'alert'], true),
      list.length === 0 ? row([{ text: 'no objective configured (slo)', class: 'mute' }]) : list.map((o) => row([
        o.route, `${o.objective} % within ${o.latencyMs} ms over ${o.windowDays} d`, num(fmt(o.events)),
        num(o.goodPercent === null ? '-' : `${fmt(o.goodPercent, 3)} %`),
        o.budgetLeftPercent === null ? { text: `judged in ${fmt(o.judgedInS)} s`, class: 'mute' } : num(`${fmt(o.budgetLeftPercent, 1)} %`, budgetClass(o)),
        num(`${burn(o, '5m')} / ${burn(o, '1h')}`), num(`${burn(o, '30m')} / ${burn(o, '6h')}`), num(`${burn(o, '2h')} / ${burn(o, '1d')}`),
        o.alerts.page ? { text: 'page', class: 'bad' } : o.alerts.ticket ? { text: 'ticket', class: 'warn' }
          : o.alerts.page === null ? { text: 'not judged yet', class: 'mute' } : { text: 'none', class: 'ok' },
      ])));
  }

  /** Shadow counts of the newest half hour, the canaries' states, the last differences field by field. */
  function renderShadow(view, canaries) {
    const p = view.periods[view.periods.length - 1];
    const rows = p === undefined ? [] : p.rows;
    replace($('shadow'), row(['subtype', 'candidate', 'same', 'different', 'candidate failed', 'live failed', 'dropped', 'canary answers'], true),
      rows.length === 0 ? row([{ text: 'no shadow traffic or canary answers yet (routes.<subtype>.shadow, .canary)', class: 'mute' }]) : rows.map((r) => row([
        r.subtype, r.candidate, num(fmt(r.same)), num(fmt(r.different), r.different > 0 ? 'warn' : ''),
        num(fmt(r.candidate_failed), r.candidate_failed > 0 ? 'bad' : ''), num(fmt(r.live_failed)), num(fmt(r.dropped), r.dropped > 0 ? 'warn' : ''),
        num(fmt(r.canary))])));
    replace($('canaries'), Object.entries(canaries || {}).map(([subtype, c]) => h('div', { class: c.state === 'armed' ? 'ok' : 'bad' },
      `canary of ${subtype} -> ${c.candidate}: ${c.state === 'armed' ? 'armed' : `rolled back at ${time(c.rolledBackAt)}: ${c.reason}`}`)));
    replace($('shadow-last'), row(['when', 'subtype', 'candidate', 'field', 'live', 'candidate\'s'], true),
      view.last.flatMap((d) => d.differences.map((f) => row([time(d.at), d.subtype, d.candidate, f.field,
        f.live === null ? { text: '(none)', class: 'mute' } : f.live, f.candidate === null ? { text: '(none)', class: 'mute' } : f.candidate]))));
  }

  let failures = 0;
  async function poll() {
    try {
      const res = await fetch('/status', { cache: 'no-store' });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const st = await res.json();
      render(st);
      if (st.halfHours) renderHalfHours(st.halfHours);
      if (st.objectives) renderObjectives(st.objectives);
      if (st.shadow) renderShadow(st.shadow, st.backend && st.backend.canaries);
      failures = 0;
      $('updated').className = '';
      $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    } catch (err) {
      failures++;
      $('updated').className = 'stale';
      $('updated').textContent = `no answer from the gateway (${failures}): ${err.message}`;
    }
    window.setTimeout(poll, 1000);
  }
  poll();
}());
