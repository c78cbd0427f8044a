'use strict';

// The router's own half-hour figures for the application gateway, as ICM keeps them in its
// Application_Gateway_Half_Hour table (docs/reports.md), per side: what the router sees of each
// query copy it sent, from the moment it sent it to the moment it read the reply. Set beside the
// gateway's /report/half-hour.csv, the counts are the same and the delays differ by the network
// and the two TCP stacks (docs/router-simulator.md, "The router's half-hour figures").
//
// A side is its ConnectInfo, as the gateway's Side column is, so that the rows of the two can be
// matched. The half hours are the gateway's own function of the local clock: the two cannot
// disagree about where a half hour starts.
//
// Each copy is booked once, when it settles: a reply within RequestTimeout (answered or an
// error, its delay, late past LateTimeout), a timeout (RequestTimeout passed: the router gives
// up, and a reply that comes later changes nothing), or lost (the connection ended first: a
// request and nothing else, as the gateway books it).

const { halfHourStart, nextHalfHour } = require('../gateway/ops/half-hour');

class SideCell {
  constructor() {
    this.requests = 0; // copies sent and settled
    this.answered = 0; // QUERY_RESP within RequestTimeout
    this.errors = 0; // FAILURE_CONF within RequestTimeout
    this.timeouts = 0; // no reply within RequestTimeout
    this.lates = 0; // replies within RequestTimeout but later than LateTimeout
    this.delaySumMs = 0; // over the replies counted (answered + errors)
    this.maxDelayMs = 0;
  }
}

class RouterHalfHours {
  /** lateTimeoutMs: the router's LateTimeout; now: the wall clock (the half hours are local clock time). */
  constructor({ lateTimeoutMs, now = Date.now }) {
    this.lateTimeoutMs = lateTimeoutMs;
    this.now = now;
    this.periods = new Map(); // start (epoch ms) -> Map(side -> SideCell), in the order first seen
    this.start = -Infinity; // the half hour written last, kept at hand: most copies settle in it
    this.end = -Infinity;
    this.sides = null;
  }

  cell(side, t) {
    if (t < this.start || t >= this.end) {
      this.start = halfHourStart(t);
      this.end = nextHalfHour(this.start);
      this.sides = this.periods.get(this.start);
      if (this.sides === undefined) {
        this.sides = new Map();
        this.periods.set(this.start, this.sides);
      }
    }
    let c = this.sides.get(side);
    if (c === undefined) {
      c = new SideCell();
      this.sides.set(side, c);
    }
    return c;
  }

  /** A reply within RequestTimeout on side: failure (a FAILURE_CONF) or answered; ms: sent to read. */
  replied(side, failure, ms, t = this.now()) {
    const c = this.cell(side, t);
    c.requests++;
    if (failure) c.errors++;
    else c.answered++;
    if (ms > this.lateTimeoutMs) c.lates++;
    c.delaySumMs += ms;
    if (ms > c.maxDelayMs) c.maxDelayMs = ms;
  }

  /** A copy on side got no reply within RequestTimeout. */
  timedOut(side, t = this.now()) {
    const c = this.cell(side, t);
    c.requests++;
    c.timeouts++;
  }

  /** n copies on side were still waiting, in time, when their connection ended. */
  lost(side, n = 1, t = this.now()) {
    if (n > 0) this.cell(side, t).requests += n;
  }

  /**
   * {lateTimeoutMs, rows}: one row per half hour and side, oldest first, under the names of the
   * gateway's CSV columns (delays in whole ms, null with no reply), with TimeoutsToHalf, which
   * the gateway cannot count, and delaySumMs as the gateway's /status has it, so that an average
   * over several rows is exact.
   */
  toJSON() {
    const rows = [];
    for (const start of [...this.periods.keys()].sort((a, b) => a - b)) {
      const sides = [...this.periods.get(start)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      for (const [side, c] of sides) {
        const replies = c.answered + c.errors;
        rows.push({
          DateTime: localTime(start),
          Side: side,
          RequestsToHalf: c.requests,
          AnsweredToHalf: c.answered,
          ErrorsToHalf: c.errors,
          TimeoutsToHalf: c.timeouts,
          AvgDelayToHalf: replies === 0 ? null : Math.round(c.delaySumMs / replies),
          MaxDelayToHalf: replies === 0 ? null : Math.round(c.maxDelayMs),
          LatesToHalf: c.lates,
          DateTimeUTC: new Date(start).toISOString(),
          delaySumMs: Math.round(c.delaySumMs * 1000) / 1000,
        });
      }
    }
    return { lateTimeoutMs: this.lateTimeoutMs, rows };
  }
}

/** The local clock time of t as the router writes DateTime: "YYYY-MM-DD HH:MM". */
function localTime(t) {
  const d = new Date(t);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

module.exports = { RouterHalfHours };
