'use strict';

// A backend answer {vars, ecc, eccArrays, ced, cdpd} -> the fields of a QUERY_RESP, made
// encodable: values become text in the answers' charset (charset.js: ASCII, or Latin-1 on a plain
// session; other characters by their base letters or '?'), too-long values are cut to the tag
// limits, and anything that cannot be carried is dropped. Each change is noted for the log.
//
// The work is bounded by what a QUERY_RESP can carry, not by what the answer holds: a value is cut
// before it is converted, and ECC entries and eccArrays elements are read only until they add up
// to more than one frame (maxBody) could hold; the rest is dropped unread (writer.js then drops
// from the end until the frame fits). An entry dropped as invalid counts as the smallest one
// kept would, so a walk of 200,000 invalid entries stops as soon as a valid walk would. A handler
// that answers 200,000 ECC entries costs the session what 8 KiB of them cost, plus V8's own
// listing of the object's keys (which no JavaScript can avoid for an object that size), once per
// reply.

const {
  MAX_TAG_DATA, MAX_ECC_NAME, MAX_ECC_VALUE, VAR_COUNT, DEFAULT_MAX_MESSAGE_LENGTH, text: { NOT_WIRE_TEXT },
} = require('../../lib/protocol');
const { isObject, setOwn } = require('../objects');
const { toCharset, cutToConvert } = require('./charset');

/** answers.charset and answers.transliterate as the schema defaults them. */
const ASCII = Object.freeze({ charset: 'ascii', transliterate: true });

/** Notes kept for one answer: the log line names the first changes and how many more there were. */
const MAX_NOTES = 20;

/** What the smallest ECC pair (a one-letter name, an empty value, their NULs) and ECC_ARRAY element take in a frame. */
const MIN_ECC_PAIR = 3;
const MIN_ECC_ELEMENT = 6;

/**
 * The changes made to one answer. A plain list inside, not an Array subclass: a subclass costs
 * V8's slow paths to make and to spread, on every reply, for notes that are almost always none.
 */
class Notes {
  constructor() {
    this.items = [];
    this.more = 0;
  }

  note(text) {
    if (this.items.length < MAX_NOTES) this.items.push(text);
    else this.more++;
  }

  /** The notes as a plain list, the last saying how many were left out (a copy only then). */
  list() {
    return this.more === 0 ? this.items : [...this.items, `... and ${this.more} more change(s)`];
  }
}

function toText(value, limit, field, notes, text) {
  if (value === undefined || value === null) return undefined;
  let s;
  if (typeof value === 'string') s = value;
  else if (typeof value === 'number' || typeof value === 'boolean') s = String(value);
  else {
    notes.note(`${field} dropped: not a string, number or boolean`);
    return undefined;
  }
  // Cut first: a 10 MB string costs what its first few `limit` characters cost (a text that
  // shrinks more than charset.js's CUT_FACTOR in conversion comes out shorter, noted as truncated).
  const cut = cutToConvert(s, limit);
  let t = toCharset(cut, text.charset, text.transliterate); // cut itself when all ASCII: one regexp test
  if (t !== cut) {
    const charset = text.charset === 'latin1' ? 'Latin-1' : 'ASCII';
    notes.note(`${field}: characters outside ${charset} ${text.transliterate ? 'transliterated or ' : ''}replaced with '?'`);
  }
  if (t.length > limit || cut !== s) {
    t = t.slice(0, limit);
    notes.note(`${field} truncated to ${limit} bytes`);
  }
  return t;
}

/**
 * Fills resp (a QUERY_RESP's fields) from answer; returns the notes (empty when nothing changed).
 * tagLimit: 255, or 248 on an encrypted session (a padded field must still fit one length byte);
 * text: {charset, transliterate} (answers.*; the writer gives ASCII on an encrypted session);
 * maxBody: the frame body limit (limits.maxMessageLength): ECC entries and eccArrays elements past
 * what it could hold are not read.
 */
function fillAnswer(resp, answer, tagLimit = MAX_TAG_DATA, text = ASCII, maxBody = DEFAULT_MAX_MESSAGE_LENGTH) {
  const notes = new Notes();
  resp.ced = toText(answer.ced, tagLimit, 'ced', notes, text);
  resp.cdpd = toText(answer.cdpd, tagLimit, 'cdpd', notes, text);
  if (isObject(answer.vars)) resp.vars = fillVars(answer.vars, tagLimit, notes, text);
  if (isObject(answer.ecc)) resp.ecc = fillEcc(answer.ecc, maxBody, notes, text);
  if (Array.isArray(answer.eccArrays)) resp.eccArrays = fillEccArrays(answer.eccArrays, maxBody, notes, text);
  return notes.list();
}

/**
 * VAR1..VAR10 read by their ten keys, never by listing the object's: V8 lists every key of an
 * object before a loop reads the first (50 ms for a handler's 200,000), and only ten can be carried.
 * Keys other than "1".."10" are not looked at, so they are dropped without a note.
 */
function fillVars(from, tagLimit, notes, text) {
  let vars;
  for (let n = 1; n <= VAR_COUNT; n++) {
    // n as a number: an index key, looked up without making its text (the text only for a note).
    if (!Object.hasOwn(from, n)) continue;
    const v = toText(from[n], tagLimit, `vars.${n}`, notes, text);
    if (v !== undefined) (vars || (vars = {}))[n] = v;
  }
  return vars;
}

function fillEcc(from, maxBody, notes, text) {
  let ecc;
  let bytes = 0; // at least what the kept pairs take in a frame (name, NUL, value, NUL)
  for (const name in from) {
    if (!Object.hasOwn(from, name)) continue;
    if (bytes > maxBody) {
      notes.note(`ecc entries from '${name.slice(0, 40)}' on not read: more than one frame (${maxBody} bytes) can carry`);
      break;
    }
    if (name.length === 0 || name.length > MAX_ECC_NAME || NOT_WIRE_TEXT.test(name)) {
      notes.note(`ecc '${name.slice(0, 40)}' dropped: name must be 1..${MAX_ECC_NAME} ASCII characters`);
      bytes += MIN_ECC_PAIR;
      continue;
    }
    const v = toText(from[name], MAX_ECC_VALUE, `ecc.${name}`, notes, text);
    if (v !== undefined) {
      if (!ecc) ecc = {};
      setOwn(ecc, name, v);
      bytes += name.length + v.length + 2;
    } else bytes += MIN_ECC_PAIR;
  }
  return ecc;
}

function fillEccArrays(from, maxBody, notes, text) {
  const out = [];
  let bytes = 0; // at least what the kept elements take in a frame (tag header, index, name, value)
  for (let i = 0; i < from.length; i++) {
    if (bytes > maxBody) {
      notes.note(`eccArrays elements from index ${i} on not read: more than one frame (${maxBody} bytes) can carry`);
      break;
    }
    const el = from[i];
    const ok = isObject(el) && typeof el.name === 'string' && el.name.length > 0 && el.name.length <= MAX_ECC_NAME
      && !NOT_WIRE_TEXT.test(el.name) && Number.isInteger(el.index) && el.index >= 0 && el.index <= 255;
    if (!ok) {
      notes.note('an eccArrays element dropped: it needs name (1..32 ASCII), index (0..255) and value');
      bytes += MIN_ECC_ELEMENT;
      continue;
    }
    const v = toText(el.value === undefined ? '' : el.value, MAX_ECC_VALUE, `eccArrays.${el.name}[${el.index}]`, notes, text);
    if (v !== undefined) {
      out.push({ name: el.name, index: el.index, value: v });
      bytes += 5 + el.name.length + v.length;
    } else bytes += MIN_ECC_ELEMENT;
  }
  return out.length > 0 ? out : undefined;
}

module.exports = { fillAnswer, ASCII };
