'use strict';

// One small class per message type, every field set in the constructor so that each type has one
// stable shape. Field names follow vectors.json. Absent optional tags are `undefined`.

const { MESSAGE_TYPES: T, STATUS_NAMES, QUERY_FLAGS } = require('./constants');

/** @typedef {import('./constants').StatusName} StatusName */
/** @typedef {'1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9' | '10'} VarNumber a peripheral variable's number, as a key */
/** @typedef {Partial<Record<VarNumber, string>>} Vars PV1..PV10 by number: {"1": "...", "10": "..."} */
/** @typedef {Record<string, string>} Ecc expanded call context variables, by name */
/** @typedef {{ name: string, index: number, value: string }} EccArrayElement one element of an ECC array */
/** @typedef {{ tag: number, data: Buffer }} UnknownTag a tag this codec does not know, kept as its raw bytes */
/**
 * The message types that carry an InvokeID and nothing else (the InvokeOnly class).
 * @typedef {'OPEN_CONF' | 'CLOSE_REQ' | 'CLOSE_CONF' | 'HEARTBEAT_REQ' | 'HEARTBEAT_CONF' | 'PARAM_CONF'} InvokeOnlyType
 */

/**
 * obj[key] = value, where key came from outside (an ECC name off the wire, a subtype): `__proto__`
 * stays a plain own property instead of replacing the object's prototype.
 */
/**
 * @param {Record<string, unknown>} obj
 * @param {string} key
 * @param {unknown} value
 */
function setOwn(obj, key, value) {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

class FailureConf {
  /**
   * @param {number} invokeId
   * @param {number} status
   * @param {string} [error] the ERROR tag's text
   */
  constructor(invokeId, status, error) {
    /** @type {'FAILURE_CONF'} */
    this.type = 'FAILURE_CONF';
    /** @type {typeof T.FAILURE_CONF} */
    this.typeId = T.FAILURE_CONF;
    this.invokeId = invokeId;
    this.status = status;
    /** The status's name, undefined for a number the table does not hold. */
    this.statusName = STATUS_NAMES[status];
    this.error = error;
  }
}

class FailureEvent {
  /**
   * @param {number} status
   * @param {string} [error] the ERROR tag's text
   */
  constructor(status, error) {
    /** @type {'FAILURE_EVENT'} */
    this.type = 'FAILURE_EVENT';
    /** @type {typeof T.FAILURE_EVENT} */
    this.typeId = T.FAILURE_EVENT;
    this.status = status;
    /** The status's name, undefined for a number the table does not hold. */
    this.statusName = STATUS_NAMES[status];
    this.error = error;
  }
}

class OpenReq {
  /**
   * @param {number} invokeId
   * @param {number} version
   * @param {number} idleTimeoutMs
   * @param {number} encryption 0: none, otherwise DES field encryption (docs/protocol.md section 7)
   * @param {string} [config] the CONFIG tag
   * @param {Buffer} [sessionKey]
   * @param {UnknownTag[]} [unknownTags]
   */
  constructor(invokeId, version, idleTimeoutMs, encryption, config, sessionKey, unknownTags) {
    /** @type {'OPEN_REQ'} */
    this.type = 'OPEN_REQ';
    /** @type {typeof T.OPEN_REQ} */
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
  /**
   * @param {number} typeId
   * @param {InvokeOnlyType} type
   * @param {number} invokeId
   */
  constructor(typeId, type, invokeId) {
    this.type = type;
    this.typeId = typeId;
    this.invokeId = invokeId;
  }
}

class QueryReq {
  /**
   * @param {number} invokeId
   * @param {number} routerCallDay
   * @param {number} routerCallKey
   * @param {number} flags the QUERY_REQ flag bits (constants.QUERY_FLAGS)
   */
  constructor(invokeId, routerCallDay, routerCallKey, flags) {
    /** @type {'QUERY_REQ'} */
    this.type = 'QUERY_REQ';
    /** @type {typeof T.QUERY_REQ} */
    this.typeId = T.QUERY_REQ;
    this.invokeId = invokeId;
    this.routerCallDay = routerCallDay;
    this.routerCallKey = routerCallKey;
    this.duplicate = (flags & QUERY_FLAGS.DUPLICATE) !== 0;
    this.noScriptReply = (flags & QUERY_FLAGS.NO_SCRIPT_REPLY) !== 0;
    /** @type {string | undefined} */
    this.subtype = undefined;
    /** @type {string | undefined} */
    this.ced = undefined;
    /** @type {string | undefined} */
    this.clid = undefined;
    /** @type {string | undefined} */
    this.cdpd = undefined;
    /** @type {string | undefined} */
    this.routingClient = undefined;
    /** @type {string | undefined} */
    this.dn = undefined;
    /** @type {Vars | undefined} */
    this.vars = undefined; // {"1": "...", ..., "10": "..."}
    /** @type {Ecc | undefined} */
    this.ecc = undefined; // {name: value}
    /** @type {EccArrayElement[] | undefined} */
    this.eccArrays = undefined; // [{name, index, value}]
    /** @type {UnknownTag[] | undefined} */
    this.unknownTags = undefined; // [{tag, data}], kept and ignored
  }
}

class QueryResp {
  /**
   * @param {number} invokeId
   * @param {number} status
   */
  constructor(invokeId, status) {
    /** @type {'QUERY_RESP'} */
    this.type = 'QUERY_RESP';
    /** @type {typeof T.QUERY_RESP} */
    this.typeId = T.QUERY_RESP;
    this.invokeId = invokeId;
    this.status = status;
    /** @type {string | undefined} */
    this.ced = undefined;
    /** @type {string | undefined} */
    this.cdpd = undefined;
    /** @type {Vars | undefined} */
    this.vars = undefined;
    /** @type {Ecc | undefined} */
    this.ecc = undefined;
    /** @type {EccArrayElement[] | undefined} */
    this.eccArrays = undefined;
    /** @type {UnknownTag[] | undefined} */
    this.unknownTags = undefined;
  }
}

class ParamReq {
  /**
   * @param {number} invokeId
   * @param {number} paramId
   * @param {number} paramValue
   */
  constructor(invokeId, paramId, paramValue) {
    /** @type {'PARAM_REQ'} */
    this.type = 'PARAM_REQ';
    /** @type {typeof T.PARAM_REQ} */
    this.typeId = T.PARAM_REQ;
    this.invokeId = invokeId;
    this.paramId = paramId;
    this.paramValue = paramValue;
  }
}

// The messages as the encoder takes them (serializer.js): plain objects, or the decoded classes above.

/** @typedef {StatusName | number} Status a status by name ('E_AG_NO_ERROR') or by its canonical number */
/** @typedef {{ tag: number, data: Buffer | string }} RawTagInput a tag written as it is: data as bytes, or ASCII text */

/**
 * The call data of QUERY_REQ and QUERY_RESP, as the encoder takes it. Text is ASCII without NUL
 * (or Latin-1 with the encoder's `latin1`); an undefined or null field is not written.
 * @typedef {object} CallDataInput
 * @property {string | null} [subtype]
 * @property {string | null} [ced]
 * @property {string | null} [clid]
 * @property {string | null} [cdpd]
 * @property {string | null} [routingClient]
 * @property {string | null} [dn]
 * @property {Partial<Record<VarNumber, string | null>>} [vars] PV1..PV10 by number
 * @property {Record<string, string | null | undefined>} [ecc] ECC variables by name
 * @property {readonly EccArrayElement[]} [eccArrays]
 * @property {readonly RawTagInput[]} [unknownTags] written after the others, as they are
 */

/**
 * @typedef {object} QueryReqInput
 * @property {number} invokeId
 * @property {number} routerCallDay
 * @property {number} routerCallKey
 * @property {boolean} [duplicate]
 * @property {boolean} [noScriptReply]
 */
/**
 * @typedef {object} QueryRespInput
 * @property {number} invokeId
 * @property {Status} [status] E_AG_NO_ERROR (0) when not given
 */
/**
 * @typedef {object} OpenReqInput
 * @property {number} invokeId
 * @property {number} version
 * @property {number} idleTimeoutMs
 * @property {number} [encryption] 0 (default): none
 * @property {string | null} [config]
 * @property {Buffer | string} [sessionKey] the sealed key (des.sealSessionKey)
 * @property {readonly RawTagInput[]} [unknownTags]
 */
/** @typedef {{ invokeId: number, paramId: number, paramValue: number }} ParamReqInput */

/**
 * A message encode() takes: a decoded message, or a plain object named by `type`.
 * (A `typeId` wins over `type` when both are given, as decoded messages carry both.)
 * @typedef {({ type: 'FAILURE_CONF', invokeId: number, status: Status, error?: string | null }
 *   | { type: 'FAILURE_EVENT', status: Status, error?: string | null }
 *   | ({ type: 'OPEN_REQ' } & OpenReqInput)
 *   | { type: InvokeOnlyType, invokeId: number }
 *   | ({ type: 'QUERY_REQ' } & QueryReqInput & CallDataInput)
 *   | ({ type: 'QUERY_RESP' } & QueryRespInput & CallDataInput)
 *   | ({ type: 'PARAM_REQ' } & ParamReqInput)) & { typeId?: number }} EncodableMessage
 */

/**
 * Any message the decoder returns; `type` tells which (a discriminated union).
 * @typedef {FailureConf | FailureEvent | OpenReq | InvokeOnly | QueryReq | QueryResp | ParamReq} Message
 */

module.exports = {
  FailureConf, FailureEvent, OpenReq, InvokeOnly, QueryReq, QueryResp, ParamReq, setOwn,
};
