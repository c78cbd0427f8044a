'use strict';

// Which way a byte stream flows, named by direction: a host reads DIRECTION.ROUTER_TO_HOST, a
// router (or the router simulator) reads DIRECTION.HOST_TO_ROUTER. The decoder refuses a type
// that the sending side never sends.

const DIRECTION = Object.freeze({
  ROUTER_TO_HOST: 'router-to-host',
  HOST_TO_ROUTER: 'host-to-router',
});

const DIRECTIONS = Object.freeze(Object.values(DIRECTION));

/** @typedef {typeof DIRECTION[keyof typeof DIRECTION]} Direction 'router-to-host' or 'host-to-router' */

module.exports = { DIRECTION, DIRECTIONS };
