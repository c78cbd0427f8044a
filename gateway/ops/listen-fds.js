'use strict';

// Socket activation: a listening socket the service manager opened and passed to this process
// (systemd's ged145.socket), as sd_listen_fds(3) defines it: LISTEN_PID is this process,
// LISTEN_FDS sockets start at fd 3, LISTEN_FDNAMES names them (FileDescriptorName=). The socket
// outlives the process: while a restart replaces the gateway, a router's reconnect waits in the
// socket's backlog instead of meeting ECONNREFUSED and its 30 s SessionRetry. The variables are
// removed once read, as sd_listen_fds(1) does, so that no child takes them for its own.

const { OperatorError } = require('../../lib/errors');

const FIRST_FD = 3;
/** The name that picks the router's socket when the unit passes several (FileDescriptorName=router). */
const ROUTER_NAME = 'router';

/** The inherited socket for the router port: {fd, name}, or null when none was passed to this process. */
function inheritedSocket(env = process.env, pid = process.pid) {
  const forUs = env.LISTEN_PID !== undefined && Number(env.LISTEN_PID) === pid;
  const count = Number(env.LISTEN_FDS);
  const names = (env.LISTEN_FDNAMES || '').split(':');
  delete env.LISTEN_PID;
  delete env.LISTEN_FDS;
  delete env.LISTEN_FDNAMES;
  if (!forUs) return null;
  if (!Number.isInteger(count) || count < 1) throw new OperatorError(`LISTEN_FDS is '${count}': socket activation passed no socket`);
  const i = names.includes(ROUTER_NAME) ? names.indexOf(ROUTER_NAME) : 0;
  if (i >= count) throw new OperatorError(`LISTEN_FDNAMES names '${ROUTER_NAME}' as socket ${i + 1} of ${count}`);
  return { fd: FIRST_FD + i, name: names[i] || null };
}

module.exports = { inheritedSocket };
