'use strict';

// Samples processes once a second: CPU%, RSS, VSZ and page faults. Uses pidstat (sysstat) when
// it is installed, as operators know it (`pidstat -h -u -r -p PID 1`), and reads /proc itself
// otherwise; `source` says which was used.

const fs = require('node:fs');
const os = require('node:os');
const { spawn, spawnSync } = require('node:child_process');

function hasPidstat() {
  const r = spawnSync('pidstat', ['-V'], { encoding: 'utf8' });
  return r.status === 0 || /sysstat/i.test(`${r.stdout}${r.stderr}`);
}

const CLK_TCK = 100; // Linux USER_HZ
const PAGE_KB = 4;

/** One /proc reading: cumulative CPU ticks, RSS/VSZ in KiB, fault counts. */
function readProc(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is state (field 3); utime = field 14, stime = 15, minflt = 10, majflt = 12, vsize = 23, rss = 24
  return {
    ticks: Number(fields[11]) + Number(fields[12]),
    minflt: Number(fields[7]),
    majflt: Number(fields[9]),
    vszKb: Number(fields[20]) / 1024,
    rssKb: Number(fields[21]) * PAGE_KB,
  };
}

class ProcessMonitor {
  /** targets: [{name, pid}]. */
  constructor(targets, { intervalMs = 1000, prefer = 'pidstat' } = {}) {
    this.targets = targets.filter((t) => t.pid);
    this.intervalMs = intervalMs;
    this.source = prefer === 'pidstat' && this.targets.length > 0 && hasPidstat() ? 'pidstat' : '/proc';
    this.samples = Object.fromEntries(this.targets.map((t) => [t.name, []]));
    this.children = [];
    this.timer = null;
    this.t0 = Date.now();
  }

  start() {
    this.t0 = Date.now();
    if (this.source === 'pidstat') this.startPidstat();
    else this.startProc();
    return this;
  }

  startProc() {
    const last = new Map();
    const tick = () => {
      const now = Date.now();
      for (const t of this.targets) {
        let r;
        try {
          r = readProc(t.pid);
        } catch {
          continue; // the process is gone
        }
        const prev = last.get(t.name);
        last.set(t.name, { ...r, at: now });
        if (!prev) continue;
        const seconds = (now - prev.at) / 1000;
        this.samples[t.name].push({
          t: (now - this.t0) / 1000,
          cpu: ((r.ticks - prev.ticks) / CLK_TCK / seconds) * 100,
          rssKb: r.rssKb,
          vszKb: r.vszKb,
          minfltPerSec: (r.minflt - prev.minflt) / seconds,
          majfltPerSec: (r.majflt - prev.majflt) / seconds,
        });
      }
    };
    tick();
    this.timer = setInterval(tick, this.intervalMs);
  }

  startPidstat() {
    for (const t of this.targets) {
      const child = spawn('pidstat', ['-h', '-u', '-r', '-p', String(t.pid), String(Math.max(1, Math.round(this.intervalMs / 1000)))], {
        stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LC_ALL: 'C', S_TIME_FORMAT: 'ISO' },
      });
      let header = null;
      let buf = '';
      child.stdout.on('data', (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line.startsWith('#')) {
            header = line.slice(1).trim().split(/\s+/);
            continue;
          }
          if (!header || line === '' || /^Linux/.test(line)) continue;
          const cols = line.split(/\s+/);
          const get = (name) => Number(cols[header.indexOf(name)]);
          if (!Number.isFinite(get('%CPU'))) continue;
          this.samples[t.name].push({
            t: (Date.now() - this.t0) / 1000,
            cpu: get('%CPU'),
            rssKb: get('RSS'),
            vszKb: get('VSZ'),
            minfltPerSec: get('minflt/s'),
            majfltPerSec: get('majflt/s'),
          });
        }
      });
      this.children.push(child);
    }
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    for (const c of this.children) c.kill('SIGTERM');
    return this.summary();
  }

  summary() {
    const out = { source: this.source, cores: os.cpus().length, processes: {} };
    for (const [name, samples] of Object.entries(this.samples)) {
      out.processes[name] = { samples, ...summarize(samples) };
    }
    return out;
  }
}

/** High-water marks, means, and the RSS trend after the first minute (KiB per hour). */
function summarize(samples) {
  if (samples.length === 0) return { cpuMax: 0, cpuMean: 0, rssMaxKb: 0, rssGrowthKbPerHour: null };
  const cpu = samples.map((s) => s.cpu);
  const settled = samples.filter((s) => s.t >= 60);
  const fitOn = settled.length >= 10 ? settled : samples.slice(Math.floor(samples.length / 3));
  return {
    cpuMax: Math.max(...cpu),
    cpuMean: cpu.reduce((a, b) => a + b, 0) / cpu.length,
    rssMaxKb: Math.max(...samples.map((s) => s.rssKb)),
    rssFirstKb: fitOn.length ? fitOn[0].rssKb : samples[0].rssKb,
    rssLastKb: samples.at(-1).rssKb,
    rssGrowthKbPerHour: fitOn.length >= 3 ? slope(fitOn.map((s) => [s.t, s.rssKb])) * 3600 : null,
    trendFrom: fitOn.length ? fitOn[0].t : null,
  };
}

/** Least-squares slope of [x, y] points. */
function slope(points) {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

module.exports = { ProcessMonitor, readProc, hasPidstat, slope };
