'use strict';

// The least a gateway can do (bench/limit.js): read a QUERY_REQ with the same framing, POST the
// contract's JSON to the backend with the gateway's engine, parse the answer and write an empty
// QUERY_RESP. No session, deadline, metrics or reply encoding. Prints its port on stdout.
//   node bench/bare-proxy.js <backendUrl>

const net = require('node:net');
const {
  MessageReader, serialize, MESSAGE_TYPES: T, DIRECTION, STATUS,
} = require('../lib/protocol');
const { createEngine, engineOptions } = require('../gateway/backend/engines');
const { DEFAULTS } = require('../gateway/config');
const { queryJson } = require('../gateway/backend/request');

const origin = new URL(process.argv[2]).origin;
const engine = createEngine('undici', engineOptions(DEFAULTS.backend));
const headers = { 'content-type': 'application/json', accept: 'application/json' };

// An exit, not a death by signal, so that --cpu-prof writes its profile (bench/profile.js).
process.on('SIGTERM', () => process.exit(0));

net.createServer({ noDelay: true }, (socket) => {
  const answer = (invokeId, status) => socket.write(serialize.queryResp({ invokeId, status }));
  const reader = new MessageReader({
    direction: DIRECTION.ROUTER_TO_HOST,
    onMessage(m) {
      if (m.typeId === T.OPEN_REQ) socket.write(serialize.openConf(m.invokeId));
      else if (m.typeId === T.QUERY_REQ) {
        const body = JSON.stringify(queryJson(m));
        engine.request({ origin, path: `/query/${m.subtype}`, method: 'POST', headers, body })
          .then((res) => JSON.parse(res.text))
          .then(() => answer(m.invokeId, STATUS.E_AG_NO_ERROR), () => answer(m.invokeId, STATUS.E_AG_HOST_ERROR1));
      }
    },
    onError: () => socket.destroy(),
  });
  socket.on('data', (c) => reader.push(c));
  socket.on('error', () => {});
}).listen(0, '127.0.0.1', function listening() {
  process.stdout.write(`${this.address().port}\n`);
});
