'use strict';

// Text from the backend -> text a tag can carry (answers.charset, docs/protocol.md "Text"): ASCII,
// or Latin-1 on a plain session. A character the charset lacks becomes its ASCII base letters where
// it has some ("José Müller" -> "Jose Muller", "Straße" -> "Strasse"), else one '?'. A character
// is what a reader sees as one (a grapheme: "e" + a combining accent, a surrogate pair, an emoji
// with its modifiers), so it is never cut in two and never costs two '?'. Every character of the
// result is one byte on the wire, so cutting it to a tag limit afterwards cuts no character.
//
// All-ASCII text, nearly every answer, is returned as it is after one regexp test: the
// normalization and the segmenter run only for text that needs them. They cost microseconds per
// character, so a caller cuts a text to what its tag can carry first (cutToConvert, then
// toCharset): 30,000 accented letters converted whole held the event loop for over 100 ms.

const { NOT_WIRE_TEXT, NOT_LATIN1_TEXT } = require('../../lib/protocol').text;

/** The charsets an answer may be written in (answers.charset). */
const CHARSETS = Object.freeze(['ascii', 'latin1']);

/**
 * Letters with no decomposition to an ASCII base (NFKD leaves them whole), written the way
 * names are written in ASCII (ICAO Doc 9303's machine-readable zone, and common use); and the
 * typographic quotes and dashes that CRMs store in names like O’Brien or Smith–Jones.
 */
const SPELLED = new Map(Object.entries({
  ß: 'ss', ẞ: 'SS', Æ: 'AE', æ: 'ae', Œ: 'OE', œ: 'oe', Ø: 'O', ø: 'o', Ł: 'L', ł: 'l', Đ: 'D', đ: 'd', Ð: 'D', ð: 'd',
  Þ: 'TH', þ: 'th', Ħ: 'H', ħ: 'h', ı: 'i', Ŀ: 'L', ŀ: 'l', Ŋ: 'N', ŋ: 'n', ĸ: 'k', Ŧ: 'T', ŧ: 't', Ə: 'E', ə: 'e',
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u2032': "'", '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u2033': '"',
  '\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2014': '-', '\u2015': '-', '\u2212': '-',
}));

const MARKS = /\p{M}/gu;
const ASCII_TEXT = /^[\x01-\x7f]+$/;
/** Invisible characters that belong to no letter (format characters: joiners, BOM, soft hyphen...): dropped. */
const INVISIBLE = /^\p{Cf}+$/u;

/**
 * A text is cut to this many times its byte limit before it is converted: a character may take
 * several UTF-16 units (accents, an emoji sequence) and still become one byte, or none. A text
 * that shrinks more than that comes out shorter than the limit.
 */
const CUT_FACTOR = 8;

let segmenter = null; // made on first use: most gateways never see a character outside ASCII

/** A character (grapheme) as ASCII: its spelling, its base letters, '' when invisible, else '?'. */
function asciiOf(ch) {
  const spelled = SPELLED.get(ch);
  if (spelled !== undefined) return spelled;
  const base = ch.normalize('NFKD').replace(MARKS, '');
  if (base.length > 0 && ASCII_TEXT.test(base)) return base;
  if (base.length === 1 && SPELLED.has(base)) return SPELLED.get(base);
  if (base.length === 0 || INVISIBLE.test(ch)) return '';
  return '?';
}

/** The slow path: character by character. */
function convert(s, latin1, transliterate) {
  if (segmenter === null) segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });
  let out = '';
  for (const { segment } of segmenter.segment(s)) {
    if (!NOT_WIRE_TEXT.test(segment)) {
      out += segment;
      continue;
    }
    if (latin1) {
      const composed = segment.normalize('NFC'); // "e" + U+0301 -> "é", one Latin-1 byte
      if (!NOT_LATIN1_TEXT.test(composed)) {
        out += composed;
        continue;
      }
    }
    out += transliterate && segment !== '\0' ? asciiOf(segment) : '?';
  }
  return out;
}

/**
 * s in the charset: 'ascii' (bytes 0x01-0x7f) or 'latin1' (0x01-0xff); transliterate false: every
 * character outside it is '?' without looking for a base letter. s itself when nothing changes.
 */
function toCharset(s, charset = 'ascii', transliterate = true) {
  const latin1 = charset === 'latin1';
  if (!(latin1 ? NOT_LATIN1_TEXT : NOT_WIRE_TEXT).test(s)) return s;
  return convert(s, latin1, transliterate);
}

/**
 * s cut to what can become at most `limit` bytes of a tag: its first limit * CUT_FACTOR UTF-16
 * units, never ending inside a surrogate pair. s itself when it is that short.
 */
function cutToConvert(s, limit) {
  const max = limit * CUT_FACTOR;
  if (s.length <= max) return s;
  const last = s.charCodeAt(max - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

module.exports = { toCharset, cutToConvert, CHARSETS };
