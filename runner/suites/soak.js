'use strict';

// soak: a long load with the gateway's CPU and RSS sampled every second; the RSS trend after the
// first minute shows a leak. A trend is reported only from MIN_TREND_S of samples after that
// minute: 20 s of a young heap growing by 2 MiB is no "550 MiB per hour".

const { load } = require('./load');
const { fixed, given } = require('../../simulator/format');

const MIN_TREND_S = 600;

async function soak(ctx, { rate = 1000, durationS = 600 } = {}) {
  const r = await load(ctx, { rate, durationS });
  const gw = r.monitor.processes.gateway;
  const rows = [...r.rows];
  const reasons = [...r.verdict.reasons];
  let growthPct = null;
  let trend = null; // KiB per hour, when the run was long enough to support one
  if (gw && gw.samples.length > 0) {
    growthPct = gw.rssFirstKb ? ((gw.rssLastKb - gw.rssFirstKb) / gw.rssFirstKb) * 100 : null;
    rows.push(['gateway CPU', `mean ${fixed(gw.cpuMean, 1)}%, high ${fixed(gw.cpuMax, 1)}% (${r.monitor.source})`]);
    const mib = (kb) => fixed(kb / 1024, 1);
    rows.push(['gateway RSS',
      `high ${mib(gw.rssMaxKb)} MiB; from ${mib(gw.rssFirstKb)} to ${mib(gw.rssLastKb)} MiB after t=${fixed(gw.trendFrom)} s (${fixed(growthPct, 1)}%)`]);
    const windowS = gw.trendFrom === null ? 0 : gw.samples.at(-1).t - gw.trendFrom;
    if (gw.rssGrowthKbPerHour !== null && windowS >= MIN_TREND_S) {
      trend = gw.rssGrowthKbPerHour;
      rows.push(['RSS trend', `${fixed(trend / 1024, 1)} MiB per hour (least squares over ${fixed(windowS)} s after the first minute)`]);
    } else {
      const changed = (gw.rssLastKb - gw.rssFirstKb) / 1024;
      rows.push(['RSS trend', `not reported: ${fixed(windowS)} s of samples after warm-up, a trend needs ${MIN_TREND_S / 60} minutes `
        + `(RSS changed ${changed >= 0 ? '+' : ''}${fixed(changed, 1)} MiB meanwhile)`]);
    }
    if (growthPct !== null && durationS >= 120 && growthPct > 10) reasons.push(`RSS grew ${fixed(growthPct, 1)}% after the first minute`);
  }
  return {
    ...r,
    suite: 'soak',
    title: `soak: ${given(rate)} queries/s for ${given(durationS)} s, gateway CPU and RSS every second`,
    figures: {
      ...r.figures,
      gateway: gw && {
        cpuMean: gw.cpuMean, cpuMax: gw.cpuMax, rssMaxKb: gw.rssMaxKb, rssGrowthKbPerHour: trend, rssGrowthPct: growthPct,
      },
    },
    rows,
    verdict: { pass: reasons.length === 0, reasons },
  };
}

module.exports = { soak, MIN_TREND_S };
