'use strict';

// Reply bytes for one session. A backend answer becomes a QUERY_RESP that fits both the tag
// limits (fit.js) and the frame limit (here): the router drops a connection on a frame over
// its limit, losing every other query in flight, so no frame we write may exceed
// limits.maxMessageLength (docs/protocol.md, framing).
//
// Policy when an answer is too big for one frame [decision]: scalar fields (VAR1..VAR10, CED,
// CDPD) are kept; ECC_ARRAY elements are dropped from the end, then ECC entries from the end,
// until the frame fits, and the drop is noted for the log. If the scalars alone do not fit (only
// possible with a very small limit), the query gets FAILURE_CONF E_AG_HOST_ERROR1.

const {
  serialize: defaultSerialize, STATUS, HEADER_LENGTH, MAX_TAG_DATA, des, text: { printable },
} = require('../../lib/protocol');
const { fillAnswer, ASCII } = require('./fit');
const { toCharset, cutToConvert } = require('./charset');

/**
 * What an encrypted session's answers are written in, for each answers.transliterate: ASCII,
 * whatever answers.charset says, because the router ignores an encrypted field that does not
 * decrypt to ASCII (docs/protocol.md, encryption).
 */
const ENCRYPTED_TEXT = { true: ASCII, false: Object.freeze({ charset: 'ascii', transliterate: false }) };


/**
 * What a session's replies must respect: the frame body limit, and on an encrypted session its
 * cipher (each tag padded to DES blocks and encrypted, so it carries at most cipher.maxField bytes).
 */
class ReplyWriter {
  /** serialize: the serializer of the session's profile (lib/protocol serializerFor). */
  constructor({ maxBody, serialize = defaultSerialize }) {
    this.maxBody = maxBody;
    this.serialize = serialize;
    this.setCipher(undefined);
  }

  /** des.createSessionCipher(...) for an encrypted session, undefined for a plain one. */
  setCipher(cipher) {
    this.cipher = cipher;
    this.tagLimit = cipher === undefined ? MAX_TAG_DATA : cipher.maxField;
    this.encodeOptions = { cipher };
    this.latin1Options = cipher === undefined ? { latin1: true } : this.encodeOptions;
  }

  /**
   * FAILURE_CONF with an ERROR text made printable ASCII (letters outside it by their base
   * letters, as answers are) and cut to the tag limit (encrypted when the session is). The text
   * is cut before it is converted: a backend's 60 KB "no" costs what its first bytes cost.
   */
  failureConf(invokeId, status, text) {
    const cut = cutToConvert(String(text || ''), this.tagLimit);
    return this.serialize.failureConf(invokeId, status, printable(toCharset(cut), this.tagLimit), this.encodeOptions);
  }

  /**
   * QUERY_RESP status 0 for q from the backend's answer: {buf, notes}, where notes lists every
   * change made to fit; buf is null when even the scalar fields alone are over the frame limit.
   * text: {charset, transliterate} (the config's answers section). Throws when the answer cannot be encoded at all.
   */
  queryResp(q, answer, text = ASCII) {
    const resp = { invokeId: q.invokeId, status: STATUS.E_AG_NO_ERROR };
    if (q.noScriptReply) return { buf: this.serialize.queryResp(resp), notes: [] }; // the script wants no data back
    const fitted = this.cipher === undefined || text.charset === 'ascii' ? text : ENCRYPTED_TEXT[text.transliterate];
    const notes = fillAnswer(resp, answer, this.tagLimit, fitted, this.maxBody);
    const buf = this.fit(resp, notes, fitted.charset === 'latin1');
    return { buf, notes };
  }

  encode(resp, latin1) {
    return this.serialize.queryResp(resp, latin1 ? this.latin1Options : this.encodeOptions);
  }

  /** Encodes resp, dropping ECC_ARRAY then ECC entries from the end until the frame fits; null if it never does. */
  fit(resp, notes, latin1 = false) {
    let buf = this.encode(resp, latin1);
    if (buf.length - HEADER_LENGTH <= this.maxBody) return buf;
    const before = buf.length - HEADER_LENGTH;
    let droppedArrays = 0;
    let droppedEcc = 0;
    // ECC_ARRAY elements are one tag each, so their cost is exact: one re-encode suffices.
    if (resp.eccArrays !== undefined) {
      let excess = before - this.maxBody;
      while (excess > 0 && resp.eccArrays.length > 0) {
        const el = resp.eccArrays.pop();
        excess -= this.tagCost(el.name.length + el.value.length + 3); // index, name NUL, value NUL
        droppedArrays++;
      }
      buf = this.encode(trimEmpty(resp), latin1);
    }
    // ECC pairs share tags, so dropping one saves about its own bytes: re-encode until it fits.
    if (buf.length - HEADER_LENGTH > this.maxBody && resp.ecc !== undefined) {
      const names = Object.keys(resp.ecc);
      while (buf.length - HEADER_LENGTH > this.maxBody && names.length > 0) {
        let excess = buf.length - HEADER_LENGTH - this.maxBody;
        while (excess > 0 && names.length > 0) {
          const name = names.pop();
          excess -= name.length + resp.ecc[name].length + 2;
          delete resp.ecc[name];
          droppedEcc++;
        }
        buf = this.encode(trimEmpty(resp), latin1);
      }
    }
    if (buf.length - HEADER_LENGTH > this.maxBody) return null;
    const what = [];
    if (droppedArrays > 0) what.push(`${droppedArrays} eccArrays element(s)`);
    if (droppedEcc > 0) what.push(`${droppedEcc} ecc entr${droppedEcc === 1 ? 'y' : 'ies'}`);
    notes.push(`${what.join(' and ')} dropped from the end: the reply was ${before} bytes, over the frame limit of ${this.maxBody} (limits.maxMessageLength)`);
    return buf;
  }

  /** Bytes one tag takes on the wire for `data` plaintext bytes. */
  tagCost(data) {
    return 2 + (this.cipher === undefined ? data : des.paddedLength(data));
  }
}

const ANSWER_FIELDS = ['vars', 'ecc', 'eccArrays', 'ced', 'cdpd'];

/**
 * The form a backend answer is kept in (the answer cache, which gets this function from the
 * gateway and knows nothing of GED-145): what a QUERY_RESP on a plain session carries of it, cut
 * to the tag limits and fitted to one frame of maxBody bytes, as an answer object again; null
 * when even its scalar fields never fit a frame. A 35 KB backend answer is kept as at most maxBody bytes.
 * text: the answers section ({charset, transliterate}); an encrypted session makes its copy ASCII when it answers.
 */
function keptAnswer(maxBody, text = ASCII) {
  const writer = new ReplyWriter({ maxBody });
  return (answer) => {
    const resp = { invokeId: 0, status: 0 };
    fillAnswer(resp, answer, MAX_TAG_DATA, text, maxBody);
    if (writer.fit(resp, [], text.charset === 'latin1') === null) return null;
    const kept = {};
    for (const f of ANSWER_FIELDS) if (resp[f] !== undefined) kept[f] = resp[f];
    return kept;
  };
}

/** The ERROR text a FAILURE_CONF carries for text on a plain session (failureConf's): what a comparison of replies reads. */
function keptError(text) {
  return printable(toCharset(cutToConvert(String(text || ''), MAX_TAG_DATA)), MAX_TAG_DATA);
}

function trimEmpty(resp) {
  if (resp.eccArrays !== undefined && resp.eccArrays.length === 0) resp.eccArrays = undefined;
  if (resp.ecc !== undefined && Object.keys(resp.ecc).length === 0) resp.ecc = undefined;
  return resp;
}

module.exports = { ReplyWriter, keptAnswer, keptError };
