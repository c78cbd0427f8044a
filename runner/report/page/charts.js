'use strict';

/* global Chart -- chart.js's bundle, inlined in the page before this script */

// The HTML report's charts, run in the browser: the page inlines Chart.js, the suites' data as
// JSON (#report-data), then this file (runner/report/html.js). Each canvas names its chart
// (data-chart) and its suite (data-suite); body[data-charts-rendered] says when all are drawn.

(function () {
  const suites = JSON.parse(document.getElementById('report-data').textContent);
  const colors = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];
  // The backend's own "no" (app_error): the status page's colour, apart from the failures.
  const APP_ERROR = '#4f46e5';
  /** A category label too long for its axis, in lines of at most `width` characters (Chart.js draws an array as lines). */
  function wrap(text, width) {
    const lines = [];
    text.split(' ').forEach(function (word) {
      const lastLine = lines[lines.length - 1];
      if (lastLine !== undefined && (lastLine + ' ' + word).length <= width) lines[lines.length - 1] = lastLine + ' ' + word;
      else lines.push(word);
    });
    return lines.length === 1 ? lines[0] : lines;
  }
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  function line(labels, sets, yTitle) {
    return { type: 'line', data: { labels: labels, datasets: sets.map(function (s, i) { return {
      label: s.label, data: s.data, borderColor: s.color || colors[i % colors.length], backgroundColor: s.color || colors[i % colors.length],
      pointRadius: s.data.length < 3 ? 3 : 0, borderWidth: 1.5,
      spanGaps: true,
    }; }) },
      options: { scales: { x: { title: { display: true, text: 'seconds' } }, y: { beginAtZero: true, title: { display: true, text: yTitle } } } } };
  }
  function processSeries(s, key) {
    const names = Object.keys(s.processes);
    const longest = names.reduce(function (a, n) { return s.processes[n].length > a.length ? s.processes[n] : a; }, []);
    return line(longest.map(function (p) { return p.t.toFixed(0); }), names.map(function (n) { return {
      label: n + (s.monitorSource ? ' (' + s.monitorSource + ')' : ''), data: s.processes[n].map(function (p) { return p[key]; }),
    }; }), key === 'cpu' ? '% of one core' : 'MiB');
  }
  const build = {
    throughput: function (s) { return line(s.timeline.map(function (p) { return p.t.toFixed(1); }), [
      { label: 'ok answers/s', color: '#16a34a', data: s.timeline.map(function (p) { return p.okPerSec; }) },
      { label: 'app error answers/s (the backend\'s "no")', color: APP_ERROR, data: s.timeline.map(function (p) { return p.appErrorPerSec || 0; }) },
      { label: 'failed answers/s', color: '#dc2626', data: s.timeline.map(function (p) { return p.failedPerSec; }) }], 'answers/s'); },
    latency: function (s) { return line(s.timeline.map(function (p) { return p.t.toFixed(1); }), [
      { label: 'p50', data: s.timeline.map(function (p) { return p.p50; }) },
      { label: 'p99', data: s.timeline.map(function (p) { return p.p99; }) },
      { label: 'max', data: s.timeline.map(function (p) { return p.max; }) }], 'ms'); },
    distribution: function (s) { return { type: 'line', data: { labels: s.distribution.map(function (d) { return 'p' + d.percentile; }), datasets: [{
      label: 'latency', data: s.distribution.map(function (d) { return d.ms; }), borderColor: colors[0], backgroundColor: colors[0], stepped: true,
    }] },
      options: { scales: { y: { type: 'logarithmic', title: { display: true, text: 'ms (log)' } } } } }; },
    errors: function (s) { let keys = Object.keys(s.errors); if (keys.length === 0) keys = ['none']; return { type: 'bar', data: { labels: keys, datasets: [{
      label: 'count', data: keys.map(function (k) { return s.errors[k] || 0; }),
      backgroundColor: keys.map(function (k) { return /^expected/.test(k) ? colors[0] : colors[1]; }),
    }] }, options: { indexAxis: 'y', scales: { x: { beginAtZero: true },
      // Long kinds ("expected: not sent while reconnecting") in lines: one line was clipped at the left edge.
      // Every kind named: Chart.js would skip every other label once they take two lines.
      y: { ticks: { autoSkip: false, font: { size: 11 }, callback: function (value) { return wrap(this.getLabelForValue(value), 24); } } } } } }; },
    transactions: function (s) {
      const kinds = ['heartbeat', 'query'];
      const plural = { heartbeat: 'heartbeats', query: 'queries' };
      return { type: 'bar', data: { labels: s.transactions.filter(function (t) { return t.kind === 'query'; }).map(function (t) { return '#' + t.n; }),
        datasets: kinds.map(function (k, i) { return {
          label: plural[k], backgroundColor: colors[i], data: s.transactions.filter(function (t) { return t.kind === k; }).map(function (t) { return t.ms; }),
        }; }) },
        options: { scales: { y: { beginAtZero: true, title: { display: true, text: 'ms' } } } } };
    },
    outcomes: function (s) {
      const o = s.outcomes;
      const palette = { ok: '#16a34a', stale: '#ea580c', fallback: '#9333ea', 'app error': APP_ERROR, 'host error': '#dc2626' };
      const shade = { id: 'faultWindows', beforeDatasetsDraw: function (chart) {
        const x = chart.scales.x; const area = chart.chartArea; const ctx = chart.ctx;
        o.windows.forEach(function (w) {
          const a = x.getPixelForValue(w.from); const b = x.getPixelForValue(w.to);
          ctx.save(); ctx.fillStyle = w.name === 'down' ? 'rgba(220,38,38,0.12)' : 'rgba(234,88,12,0.10)';
          ctx.fillRect(a, area.top, b - a, area.bottom - area.top);
          ctx.fillStyle = '#555'; ctx.font = '11px system-ui'; ctx.fillText('backend ' + w.name, a + 4, area.top + 12); ctx.restore();
        });
      } };
      return { type: 'line', plugins: [shade], data: { datasets: o.groups.map(function (g) { return {
        label: g, data: o.seconds.map(function (p) { return { x: p.t, y: p[g] }; }), borderColor: palette[g], backgroundColor: palette[g],
        pointRadius: 0, borderWidth: 2, fill: false,
      }; }) },
      options: { scales: {
        x: { type: 'linear', title: { display: true, text: 'seconds' } }, y: { beginAtZero: true, title: { display: true, text: 'answers/s' } },
      } } };
    },
    capacity: function (s) {
      const steps = s.capacity;
      return { type: 'line', data: { labels: steps.map(function (x) { return x.rate.toLocaleString('en-US') + '/s'; }), datasets: [
        { label: 'p99 ms', data: steps.map(function (x) { return x.p99; }), borderColor: colors[1], backgroundColor: colors[1], yAxisID: 'ms', pointRadius: 4 },
        {
          label: 'answered ok %', data: steps.map(function (x) { return x.successPct; }),
          borderColor: colors[2], backgroundColor: colors[2], yAxisID: 'pct', pointRadius: 4,
        },
      ] },
      options: { scales: {
        x: { title: { display: true, text: 'offered rate (queries/s)' } },
        ms: { type: 'linear', position: 'left', beginAtZero: true, title: { display: true, text: 'p99 ms' } },
        pct: { type: 'linear', position: 'right', min: 0, max: 100, grid: { drawOnChartArea: false }, title: { display: true, text: '% ok' } },
      } } };
    },
    cpu: function (s) { return processSeries(s, 'cpu'); },
    rss: function (s) { return processSeries(s, 'rssMb'); }
  };
  let rendered = 0;
  document.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
    const s = suites[Number(canvas.dataset.suite)];
    new Chart(canvas, build[canvas.dataset.chart](s));
    rendered++;
  });
  document.body.dataset.chartsRendered = String(rendered);
})();
