'use strict';

// The backend side's entry: what the session and the server may use. A query goes in through
// QueryResolver.resolve() (cache, backend, stale, fallback: availability.js) with its QuerySignal,
// and comes back as an outcome (outcome.js). Nothing here knows about sockets or replies.

const { QueryResolver } = require('./availability');
const { QuerySignal, DEADLINE, DEADLINE_LATE } = require('./abort');

module.exports = {
  QueryResolver, QuerySignal, DEADLINE, DEADLINE_LATE,
};
