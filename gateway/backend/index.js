'use strict';

// The backend side's entry: what the session and the server may use. A query goes in through
// QueryResolver.dispatch(), which gives back the query's handle (handle.js) and calls its handler
// with one outcome (outcome.js), after the cache, the backend, a stale answer or the fallback
// (availability.js). Nothing here knows about sockets or replies.

const { QueryResolver } = require('./availability');
const { QuerySignal } = require('./abort');
const { Dispatcher } = require('./handle');

module.exports = {
  QueryResolver, QuerySignal, Dispatcher,
};
