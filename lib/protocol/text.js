'use strict';

// What counts as text on the wire (docs/protocol.md, tagged fields): ASCII without NUL. And the
// one way we make outside text safe to show: printable ASCII, '?' for anything else, bounded.

/** Any character a tag's text may not hold: NUL and everything past 0x7f. */
const NOT_WIRE_TEXT = /[^\x01-\x7f]/;
/** Any character a tag may not hold when answers are Latin-1 (answers.charset): NUL and everything past 0xff. */
const NOT_LATIN1_TEXT = /[^\x01-\xff]/;

/**
 * Text for a log field, a metric label or an ERROR tag: printable ASCII only, at most max characters.
 * @param {unknown} text anything; it is turned into a string first
 * @param {number} [max]
 * @returns {string}
 */
function printable(text, max = Infinity) {
  const s = String(text).replace(/[^\x20-\x7e]/g, '?');
  return s.length > max ? s.slice(0, max) : s;
}

module.exports = { NOT_WIRE_TEXT, NOT_LATIN1_TEXT, printable };
