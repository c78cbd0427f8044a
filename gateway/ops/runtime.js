'use strict';

// The one shape of a running gateway, whether it is one process (gateway/index.js, ProcessRuntime)
// or a cluster's primary with its workers (gateway/ops/cluster.js, ClusterPrimary):
//
//   start()          listens for routers, then opens the admin port; resolves the runtime
//   reload(next)     SIGHUP: a validated configuration takes over; resolves with lastReload
//   refused(message) SIGHUP whose file did not validate: nothing changes, /status says why
//   restart()        SIGUSR2: a rolling restart (only a cluster has one; one process says so)
//   snapshot()       what /status shows
//   stop(reason)     SIGTERM: drains, closes the admin port
//
// How the last reload went (`lastReload`, on /status as config.lastReload) is recorded here and
// nowhere else: {at, ok, restartNeeded} or {at, ok: false, error}, a cluster adding its generation.
// The admin port (/status, /health, /ready, /sessions, /metrics, /report/half-hour.csv) is wired
// here, once, against that shape; a subclass says how it answers each (open, close, apply, status,
// health, notReady, sessions, metrics, reports, contentType).

const { startAdmin } = require('./admin');

class Runtime {
  /** listenFd: a listening socket the service manager passed (ops/listen-fds.js), used instead of host and port. */
  constructor(config, { log, listenFd = null }) {
    this.config = config;
    this.log = log;
    this.listenFd = listenFd;
    this.port = null; // the GED-145 port, once listening
    this.admin = null;
    this.lastReload = null; // how the last SIGHUP went: see the top of this file
  }

  get adminPort() {
    return this.admin === null ? null : this.admin.port;
  }

  async start() {
    const { admin } = this.config; // a restart setting: what it is at the start it stays
    await this.open();
    try {
      this.admin = await startAdmin(admin, this.log, {
        status: () => this.snapshot(),
        health: () => this.health(),
        notReady: () => this.notReady(),
        sessions: () => this.sessions(),
        metrics: () => this.metrics(),
        reports: () => this.reports(),
        contentType: this.contentType,
      });
    } catch (err) {
      await this.close('admin port failed');
      throw err;
    }
    return this;
  }

  /**
   * A validated configuration takes over (restart settings held: config/restart.js); the
   * subclass's apply() resolves with how it went. A reload that fails (a log file that cannot be
   * opened) leaves the running one in force, is logged, and is reported as failed.
   */
  async reload(next) {
    try {
      this.lastReload = await this.apply(next);
    } catch (err) {
      this.log.error(`reload failed, the running configuration stays in force: ${err.message}`);
      this.lastReload = failedReload(err.message);
    }
    return this.lastReload;
  }

  /** A reload refused before it reached the gateway (the file did not validate): the running settings stay. */
  refused(message) {
    this.lastReload = failedReload(message);
  }

  /** /status: the subclass's status(), with how the last reload went. */
  async snapshot() {
    const status = await this.status();
    return { ...status, config: { ...status.config, lastReload: this.lastReload } };
  }

  async stop(reason) {
    await this.close(reason);
    if (this.admin !== null) await this.admin.close();
  }
}

const failedReload = (error) => ({ at: new Date().toISOString(), ok: false, error });

module.exports = { Runtime };
