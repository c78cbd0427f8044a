'use strict';

// soak: a long load with the gateway's CPU and RSS sampled every second; the RSS trend after the
// first minute shows a leak.

const { load } = require('./load');

async function soak(ctx, { rate = 1000, durationS = 600 } = {}) {
  const r = await load(ctx, { rate, durationS });
  const gw = r.monitor.processes.gateway;
  const rows = [...r.rows];
  const reasons = [...r.verdict.reasons];
  let growthPct = null;
  if (gw && gw.samples.length > 0) {
    growthPct = gw.rssFirstKb ? ((gw.rssLastKb - gw.rssFirstKb) / gw.rssFirstKb) * 100 : null;
    rows.push(['gateway CPU', `mean ${gw.cpuMean.toFixed(1)}%, high ${gw.cpuMax.toFixed(1)}% (${r.monitor.source})`]);
    const mib = (kb) => (kb / 1024).toFixed(1);
    rows.push(['gateway RSS',
      `high ${mib(gw.rssMaxKb)} MiB; from ${mib(gw.rssFirstKb)} to ${mib(gw.rssLastKb)} MiB after t=${Math.round(gw.trendFrom)} s (${growthPct.toFixed(1)}%)`]);
    rows.push(['RSS trend', gw.rssGrowthKbPerHour === null ? 'too short to tell' : `${(gw.rssGrowthKbPerHour / 1024).toFixed(1)} MiB per hour`]);
    if (growthPct !== null && durationS >= 120 && growthPct > 10) reasons.push(`RSS grew ${growthPct.toFixed(1)}% after the first minute`);
  }
  return {
    ...r,
    suite: 'soak',
    title: `soak: ${rate} queries/s for ${durationS} s, gateway CPU and RSS every second`,
    figures: {
      ...r.figures,
      gateway: gw && { cpuMean: gw.cpuMean, cpuMax: gw.cpuMax, rssMaxKb: gw.rssMaxKb, rssGrowthKbPerHour: gw.rssGrowthKbPerHour, rssGrowthPct: growthPct },
    },
    rows,
    verdict: { pass: reasons.length === 0, reasons },
  };
}

module.exports = { soak };
