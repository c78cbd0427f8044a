'use strict';

// A backend answer {vars, ecc, eccArrays, ced, cdpd} -> the fields of a QUERY_RESP, made
// encodable: values become text in the answers' charset (charset.js: ASCII, or Latin-1 on a plain
// session; other characters by their base letters or '?'), too-long values are cut to the tag
// limits, and anything that cannot be carried is dropped. Each change is noted for the log.

const {
  MAX_TAG_DATA, MAX_ECC_NAME, MAX_ECC_VALUE, VAR_COUNT, text: { NOT_WIRE_TEXT },
} = require('../../lib/protocol');
const { isObject, setOwn } = require('../../lib/objects');
const { toCharset } = require('./charset');

/** answers.charset and answers.transliterate as the schema defaults them. */
const ASCII = Object.freeze({ charset: 'ascii', transliterate: true });

function toText(value, limit, field, notes, text) {
  if (value === undefined || value === null) return undefined;
  let s;
  if (typeof value === 'string') s = value;
  else if (typeof value === 'number' || typeof value === 'boolean') s = String(value);
  else {
    notes.push(`${field} dropped: not a string, number or boolean`);
    return undefined;
  }
  const t = toCharset(s, text.charset, text.transliterate); // s itself when all ASCII: one regexp test
  if (t !== s) {
    s = t;
    const charset = text.charset === 'latin1' ? 'Latin-1' : 'ASCII';
    notes.push(`${field}: characters outside ${charset} ${text.transliterate ? 'transliterated or ' : ''}replaced with '?'`);
  }
  if (s.length > limit) {
    s = s.slice(0, limit);
    notes.push(`${field} truncated to ${limit} bytes`);
  }
  return s;
}

/**
 * Fills resp (a QUERY_RESP's fields) from answer; returns the notes (empty when nothing changed).
 * tagLimit: 255, or 248 on an encrypted session (a padded field must still fit one length byte);
 * text: {charset, transliterate} (answers.*; the writer gives ASCII on an encrypted session).
 */
function fillAnswer(resp, answer, tagLimit = MAX_TAG_DATA, text = ASCII) {
  const notes = [];
  resp.ced = toText(answer.ced, tagLimit, 'ced', notes, text);
  resp.cdpd = toText(answer.cdpd, tagLimit, 'cdpd', notes, text);
  if (isObject(answer.vars)) {
    let vars;
    for (const key of Object.keys(answer.vars)) {
      const n = Number(key);
      if (!Number.isInteger(n) || n < 1 || n > VAR_COUNT) {
        notes.push(`vars.${key} dropped: not a peripheral variable 1..${VAR_COUNT}`);
        continue;
      }
      const v = toText(answer.vars[key], tagLimit, `vars.${key}`, notes, text);
      if (v !== undefined) (vars || (vars = {}))[n] = v;
    }
    resp.vars = vars;
  }
  if (isObject(answer.ecc)) {
    let ecc;
    for (const name of Object.keys(answer.ecc)) {
      if (name.length === 0 || name.length > MAX_ECC_NAME || NOT_WIRE_TEXT.test(name)) {
        notes.push(`ecc '${name.slice(0, 40)}' dropped: name must be 1..${MAX_ECC_NAME} ASCII characters`);
        continue;
      }
      const v = toText(answer.ecc[name], MAX_ECC_VALUE, `ecc.${name}`, notes, text);
      if (v !== undefined) {
        if (!ecc) ecc = {};
        setOwn(ecc, name, v);
      }
    }
    resp.ecc = ecc;
  }
  if (Array.isArray(answer.eccArrays)) {
    const out = [];
    for (const el of answer.eccArrays) {
      const ok = isObject(el) && typeof el.name === 'string' && el.name.length > 0 && el.name.length <= MAX_ECC_NAME
        && !NOT_WIRE_TEXT.test(el.name) && Number.isInteger(el.index) && el.index >= 0 && el.index <= 255;
      if (!ok) {
        notes.push('an eccArrays element dropped: it needs name (1..32 ASCII), index (0..255) and value');
        continue;
      }
      const v = toText(el.value === undefined ? '' : el.value, MAX_ECC_VALUE, `eccArrays.${el.name}[${el.index}]`, notes, text);
      if (v !== undefined) out.push({ name: el.name, index: el.index, value: v });
    }
    resp.eccArrays = out.length > 0 ? out : undefined;
  }
  return notes;
}

module.exports = { fillAnswer, ASCII };
