'use strict';

// The kinds of route a subtype can have, written once: the configuration compiles a route into
// one of them (gateway/config/routes.js) and the backend, the gateway and the command line read
// its kind. A subtype without a route of its own is the default contract's.

const ROUTE_KIND = Object.freeze({
  CONTRACT: 'contract', // the default contract (POST {backend.url}/query/{subtype}), perhaps with settings of its own
  HTTP: 'http', // a REST call of the route's own: method, URL template, headers, body, mapping
  MODULE: 'module', // a JS handler module the operator names
});

module.exports = { ROUTE_KIND };
