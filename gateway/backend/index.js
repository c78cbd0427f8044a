'use strict';

// The backend side's entry: what the session and the server may use. A query goes in through
// Backend.dispatch(), which gives back the query's handle (handle.js) and calls its handler with
// one outcome (outcome.js), after the backend chain (backend.js draws it; layers/, one file each).
// Nothing here knows about sockets or replies.

const { Backend } = require('./backend');
const { QuerySignal } = require('./abort');
const { QueryHandle } = require('./handle');

module.exports = { Backend, QuerySignal, QueryHandle };
