'use strict';

// One small class per message type, every field set in the constructor so that each type has one
// stable shape. Field names follow vectors.json. Absent optional tags are `undefined`.

const { MESSAGE_TYPES: T, STATUS_NAMES, QUERY_FLAGS } = require('./constants');

/**
 * obj[key] = value, where key came from outside (an ECC name off the wire, a subtype): `__proto__`
 * stays a plain own property instead of replacing the object's prototype.
 */
function setOwn(obj, key, value) {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

class FailureConf {
  constructor(invokeId, status, error) {
    this.type = 'FAILURE_CONF';
    this.typeId = T.FAILURE_CONF;
    this.invokeId = invokeId;
    this.status = status;
    this.statusName = STATUS_NAMES[status];
    this.error = error;
  }
}

class FailureEvent {
  constructor(status, error) {
    this.type = 'FAILURE_EVENT';
    this.typeId = T.FAILURE_EVENT;
    this.status = status;
    this.statusName = STATUS_NAMES[status];
    this.error = error;
  }
}

class OpenReq {
  constructor(invokeId, version, idleTimeoutMs, encryption, config, sessionKey, unknownTags) {
    this.type = 'OPEN_REQ';
    this.typeId = T.OPEN_REQ;
    this.invokeId = invokeId;
    this.version = version;
    this.idleTimeoutMs = idleTimeoutMs;
    this.encryption = encryption;
    this.config = config;
    this.sessionKey = sessionKey; // Buffer, raw bytes of the SESSION_KEY tag
    this.unknownTags = unknownTags;
  }
}

/** OPEN_CONF, CLOSE_REQ, CLOSE_CONF, HEARTBEAT_REQ, HEARTBEAT_CONF and PARAM_CONF: InvokeID only. */
class InvokeOnly {
  constructor(typeId, type, invokeId) {
    this.type = type;
    this.typeId = typeId;
    this.invokeId = invokeId;
  }
}

class QueryReq {
  constructor(invokeId, routerCallDay, routerCallKey, flags) {
    this.type = 'QUERY_REQ';
    this.typeId = T.QUERY_REQ;
    this.invokeId = invokeId;
    this.routerCallDay = routerCallDay;
    this.routerCallKey = routerCallKey;
    this.duplicate = (flags & QUERY_FLAGS.DUPLICATE) !== 0;
    this.noScriptReply = (flags & QUERY_FLAGS.NO_SCRIPT_REPLY) !== 0;
    this.subtype = undefined;
    this.ced = undefined;
    this.clid = undefined;
    this.cdpd = undefined;
    this.routingClient = undefined;
    this.dn = undefined;
    this.vars = undefined; // {"1": "...", ..., "10": "..."}
    this.ecc = undefined; // {name: value}
    this.eccArrays = undefined; // [{name, index, value}]
    this.unknownTags = undefined; // [{tag, data}], kept and ignored
  }
}

class QueryResp {
  constructor(invokeId, status) {
    this.type = 'QUERY_RESP';
    this.typeId = T.QUERY_RESP;
    this.invokeId = invokeId;
    this.status = status;
    this.ced = undefined;
    this.cdpd = undefined;
    this.vars = undefined;
    this.ecc = undefined;
    this.eccArrays = undefined;
    this.unknownTags = undefined;
  }
}

class ParamReq {
  constructor(invokeId, paramId, paramValue) {
    this.type = 'PARAM_REQ';
    this.typeId = T.PARAM_REQ;
    this.invokeId = invokeId;
    this.paramId = paramId;
    this.paramValue = paramValue;
  }
}

module.exports = {
  FailureConf, FailureEvent, OpenReq, InvokeOnly, QueryReq, QueryResp, ParamReq, setOwn,
};
